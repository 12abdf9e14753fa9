#!/usr/bin/env bash
# Make a private certificate authority and a TLS server certificate for the SuperLink.
#
#   deploy/make-certs.sh [-o DIR] HOSTNAME_OR_IP [HOSTNAME_OR_IP ...]
#   deploy/make-certs.sh -o certs superlink.example.org 10.0.0.5
#
# Writes DIR (default: ./certs): ca.crt and ca.key (the CA; keep ca.key private, off the
# SuperLink if you can), server.crt and server.key (the SuperLink's certificate, valid for every
# name and IP given, as subjectAltNames). Copy ca.crt to every SuperNode machine and to every
# machine that submits runs (--root-certificates / root-certificates). Existing files in DIR
# are never overwritten: remove them to make new ones. Needs openssl.
set -euo pipefail
OUT=certs
DAYS=${DAYS:-825}
usage() { sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
while getopts "o:h" opt; do
  case $opt in o) OUT=$OPTARG ;; h) usage 0 ;; *) usage 2 ;; esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "make-certs: give at least one hostname or IP address of the SuperLink" >&2; exit 2; }
command -v openssl >/dev/null || { echo "make-certs: openssl not found" >&2; exit 2; }
for f in ca.crt ca.key server.crt server.key; do
  [ ! -e "$OUT/$f" ] || { echo "make-certs: $OUT/$f exists; remove it to make new certificates" >&2; exit 2; }
done

SAN=""
for name in "$@"; do
  if [[ $name =~ ^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$ || $name == *:* ]]; then
    SAN+="${SAN:+,}IP:$name"
  elif [[ $name =~ ^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$ ]]; then
    SAN+="${SAN:+,}DNS:$name"
  else
    echo "make-certs: $name is neither a hostname nor an IP address" >&2; exit 2
  fi
done

mkdir -p "$OUT"
umask 077
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
openssl req -x509 -newkey rsa:4096 -sha256 -days "$DAYS" -nodes \
  -keyout "$OUT/ca.key" -out "$OUT/ca.crt" -subj "/CN=ldpgraph private CA" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
  2>/dev/null
openssl req -newkey rsa:4096 -sha256 -nodes -keyout "$OUT/server.key" -out "$TMP/server.csr" \
  -subj "/CN=$1" 2>/dev/null
printf 'subjectAltName=%s\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n' \
  "$SAN" >"$TMP/ext.cnf"
openssl x509 -req -in "$TMP/server.csr" -CA "$OUT/ca.crt" -CAkey "$OUT/ca.key" -CAcreateserial \
  -CAserial "$TMP/ca.srl" -out "$OUT/server.crt" -days "$DAYS" -sha256 -extfile "$TMP/ext.cnf" \
  2>/dev/null
chmod 644 "$OUT/ca.crt" "$OUT/server.crt"
echo "make-certs: wrote $OUT/ca.crt, $OUT/ca.key, $OUT/server.crt, $OUT/server.key for $SAN"
