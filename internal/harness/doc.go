// Package harness holds what exercises the product from outside: the
// benchmark (bench), the fault-injection run and its checker (torture),
// the test gateways and shared test setup (testgw, testenv), and test
// credentials (testcerts, testjwt). They import the product packages;
// only cmd/ and tests may import them (TestLayering), so no arrow runs
// from the product back up to its harnesses. Leaf helpers that product
// packages may use live beside this directory, in internal/.
package harness
