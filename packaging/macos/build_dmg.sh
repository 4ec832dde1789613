#!/usr/bin/env bash
# Wrap dist/Reviewer.app (from `python packaging/build_installers.py bundle`) in a compressed .dmg with an
# Applications link; sign, notarise and staple it when the credentials are in the environment.
#
#   MACOS_SIGN_IDENTITY          Developer ID Application identity (see import_certificate.sh);
#                                the spec already signed the app with it during the bundle build
#   APPLE_ID, APPLE_TEAM_ID,     notarisation through `xcrun notarytool` (an app-specific password)
#   APPLE_APP_PASSWORD
#
# Output: dist/reviewer-app-<version>-macos-<arch>.dmg
set -euo pipefail
cd "$(dirname "$0")/../.."
python_bin="${PYTHON:-python3}"
app="dist/Reviewer.app"
version="$("$python_bin" packaging/project_meta.py version)"
arch="$(uname -m)"
dmg="dist/reviewer-app-${version}-macos-${arch}.dmg"

[ -d "$app" ] || { echo "no $app: run \`python packaging/build_installers.py bundle\` first" >&2; exit 1; }

if [ -n "${MACOS_SIGN_IDENTITY:-}" ]; then
  codesign --verify --deep --strict --verbose=2 "$app"
else
  echo "MACOS_SIGN_IDENTITY not set: the .dmg holds an ad-hoc signed app (Gatekeeper will warn)" >&2
fi

staging="$(mktemp -d)"
trap 'rm -rf "$staging"' EXIT
cp -R "$app" "$staging/"
ln -s /Applications "$staging/Applications"
rm -f "$dmg"
hdiutil create -volname "Reviewer ${version}" -srcfolder "$staging" -fs HFS+ -format UDZO -ov "$dmg"

if [ -n "${MACOS_SIGN_IDENTITY:-}" ]; then
  codesign --force --sign "$MACOS_SIGN_IDENTITY" --timestamp "$dmg"
  if [ -n "${APPLE_ID:-}" ] && [ -n "${APPLE_TEAM_ID:-}" ] && [ -n "${APPLE_APP_PASSWORD:-}" ]; then
    xcrun notarytool submit "$dmg" --apple-id "$APPLE_ID" --team-id "$APPLE_TEAM_ID" \
      --password "$APPLE_APP_PASSWORD" --wait --timeout 30m
    xcrun stapler staple "$dmg"
    xcrun stapler validate "$dmg"
    spctl --assess --type open --context context:primary-signature --verbose=2 "$dmg"
  else
    echo "APPLE_ID/APPLE_TEAM_ID/APPLE_APP_PASSWORD not set: the .dmg is signed but not notarised" >&2
  fi
fi
echo "built $dmg"
