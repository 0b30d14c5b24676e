#!/bin/sh
# Makes the certificates of the TLS compose stack (docker-compose.tls.yml)
# into DIR (default deploy/tls/certs): a CA, and signed by it a server
# certificate for the gateway, for each etcd member (serving and peering)
# and for PostgreSQL, a client certificate for the gateway to show etcd,
# and one for the demo's billing client to show the gateway (mTLS).
# For a local stack: keys are readable by their containers' users, and
# the CA's key is kept beside them. Run it once, before
#   docker-compose -f docker-compose.yml -f docker-compose.tls.yml up --build
set -eu
dir=${1:-deploy/tls/certs}
days=${DAYS:-825}
mkdir -p "$dir"
cd "$dir"

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days "$days" \
	-subj "/CN=fencegw compose CA" -keyout ca.key -out ca.crt 2>/dev/null

# leaf NAME USAGE SANS: NAME.crt and NAME.key, signed by the CA.
leaf() {
	name=$1 usage=$2 sans=$3
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$name" \
		-keyout "$name.key" -out "$name.csr" 2>/dev/null
	printf 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=%s\nsubjectAltName=%s\n' "$usage" "$sans" >"$name.ext"
	openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days "$days" \
		-extfile "$name.ext" -out "$name.crt" 2>/dev/null
	rm -f "$name.csr" "$name.ext"
}

leaf fencegw serverAuth "DNS:fencegw,DNS:localhost,IP:127.0.0.1"
for m in etcd1 etcd2 etcd3; do
	leaf "$m" serverAuth,clientAuth "DNS:$m,DNS:localhost,IP:127.0.0.1"
done
leaf postgres serverAuth "DNS:postgres,DNS:localhost,IP:127.0.0.1"
leaf fencegw-etcd clientAuth "DNS:fencegw"
leaf billing clientAuth "URI:spiffe://fencegw.local/billing"
# The gateway runs as uid 65532 and etcd as root in their images; the
# postgres service copies its pair and sets its owner (it refuses a key
# others may read).
chmod 0644 ./*.key ./*.crt
echo "certificates in $dir"
