package sqlfront_test

import (
	"os"
	"testing"

	"github.com/fencegw/fencegw/internal/harness/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }
