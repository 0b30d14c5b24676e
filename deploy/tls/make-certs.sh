#!/bin/sh
# Makes the certificates of the TLS compose stack (docker-compose.tls.yml)
# into DIR (default deploy/tls/certs), under two CAs that trust apart:
#   ca       the gateway's HTTPS certificate, PostgreSQL's, and the
#            application clients' (the demo's billing, for mTLS to the
#            gateway); etcd does not trust it.
#   etcd-ca  each etcd member's (serving and peering), and the only
#            client certificates etcd accepts: the gateway's etcd identity
#            (common name fencegw, the etcd user limited to /fencegw/) and
#            etcd-root (common name root, for operators and the one-shot
#            etcd-auth service).
# A certificate of ca reaches no etcd; one of etcd-ca whose common name is
# no etcd user reads and writes nothing once etcd-auth has turned auth on.
# Each service mounts only its own files. For a local stack: keys are
# readable by their containers' users, and the CAs' keys are kept beside
# them. Run it once, before
#   docker-compose -f docker-compose.yml -f docker-compose.tls.yml up --build
set -eu
dir=${1:-deploy/tls/certs}
days=${DAYS:-825}
mkdir -p "$dir"
cd "$dir"

# ca NAME SUBJECT: NAME.crt and NAME.key, a CA.
ca() {
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days "$days" \
		-subj "/CN=$2" -keyout "$1.key" -out "$1.crt" 2>/dev/null
}

# leaf CA NAME CN USAGE SANS: NAME.crt and NAME.key, of common name CN,
# signed by CA.
leaf() {
	issuer=$1 name=$2 cn=$3 usage=$4 sans=$5
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$cn" \
		-keyout "$name.key" -out "$name.csr" 2>/dev/null
	printf 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=%s\nsubjectAltName=%s\n' "$usage" "$sans" >"$name.ext"
	openssl x509 -req -in "$name.csr" -CA "$issuer.crt" -CAkey "$issuer.key" -CAcreateserial -days "$days" \
		-extfile "$name.ext" -out "$name.crt" 2>/dev/null
	rm -f "$name.csr" "$name.ext"
}

ca ca "fencegw compose CA"
ca etcd-ca "fencegw compose etcd CA"

leaf ca fencegw fencegw serverAuth "DNS:fencegw,DNS:localhost,IP:127.0.0.1"
leaf ca postgres postgres serverAuth "DNS:postgres,DNS:localhost,IP:127.0.0.1"
leaf ca billing billing clientAuth "URI:spiffe://fencegw.local/billing"
for m in etcd1 etcd2 etcd3; do
	leaf etcd-ca "$m" "$m" serverAuth,clientAuth "DNS:$m,DNS:localhost,IP:127.0.0.1"
done
leaf etcd-ca fencegw-etcd fencegw clientAuth "DNS:fencegw"
leaf etcd-ca etcd-root root clientAuth "DNS:etcd-auth"
# The gateway runs as uid 65532 and etcd as root in their images; the
# postgres service copies its pair and sets its owner (it refuses a key
# others may read).
chmod 0644 ./*.key ./*.crt
echo "certificates in $dir"
