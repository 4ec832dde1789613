#!/usr/bin/env bash
# Import the Developer ID Application certificate from CI secrets into a throwaway keychain and
# print the signing identity for the PyInstaller spec (MACOS_SIGN_IDENTITY). No secrets: prints nothing.
#
#   MACOS_CERTIFICATE_P12_BASE64  base64 of the .p12 export (certificate + private key)
#   MACOS_CERTIFICATE_PASSWORD    its export password
set -euo pipefail
if [ -z "${MACOS_CERTIFICATE_P12_BASE64:-}" ] || [ -z "${MACOS_CERTIFICATE_PASSWORD:-}" ]; then
  echo "no signing certificate in the environment: the app will be signed ad hoc" >&2
  exit 0
fi
workdir="${RUNNER_TEMP:-$(mktemp -d)}"
keychain="$workdir/reviewer-signing.keychain-db"
keychain_password="$(uuidgen)"
certificate="$workdir/certificate.p12"
trap 'rm -f "$certificate"' EXIT

echo "$MACOS_CERTIFICATE_P12_BASE64" | base64 --decode > "$certificate"
security create-keychain -p "$keychain_password" "$keychain"
security set-keychain-settings -lut 21600 "$keychain"
security unlock-keychain -p "$keychain_password" "$keychain"
security import "$certificate" -k "$keychain" -P "$MACOS_CERTIFICATE_PASSWORD" -T /usr/bin/codesign
security set-key-partition-list -S apple-tool:,apple:,codesign: -s -k "$keychain_password" "$keychain" >/dev/null
# Search the new keychain first, keep the existing ones.
security list-keychains -d user -s "$keychain" $(security list-keychains -d user | tr -d '"')

identity="$(security find-identity -v -p codesigning "$keychain" | awk -F'"' '/Developer ID Application/ {print $2; exit}')"
if [ -z "$identity" ]; then
  echo "the certificate holds no 'Developer ID Application' identity" >&2
  exit 1
fi
echo "$identity"
