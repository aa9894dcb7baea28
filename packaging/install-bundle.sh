#!/usr/bin/env bash
# Install a built bundle (packaging/build-bundle.sh) for one user, or system-wide, so that the
# desktop file's `Exec=boris-desktop` and the icon are found:
#
#   bash packaging/install-bundle.sh                 # into ~/.local
#   sudo bash packaging/install-bundle.sh --prefix /usr/local
#   bash packaging/install-bundle.sh --uninstall     # remove what an install put there
#
# PREFIX/lib/boris-desktop/ holds the bundle; PREFIX/bin/boris-desktop and PREFIX/bin/boris
# link into it; the desktop file, metainfo and icons go under PREFIX/share.
set -euo pipefail
cd "$(dirname "$0")/.."

PREFIX=${HOME}/.local
BUNDLE=dist/boris-desktop
UNINSTALL=0
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) PREFIX=$2; shift ;;
    --bundle) BUNDLE=$2; shift ;;
    --uninstall) UNINSTALL=1 ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install-bundle: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

ID=org.boris.BorisDesktop
SIZES="16 32 48 64 128 256 512"
installed_files() {
  echo "$PREFIX/bin/boris-desktop"
  echo "$PREFIX/bin/boris"
  echo "$PREFIX/share/applications/$ID.desktop"
  echo "$PREFIX/share/metainfo/$ID.metainfo.xml"
  echo "$PREFIX/share/icons/hicolor/scalable/apps/$ID.svg"
  for size in $SIZES; do echo "$PREFIX/share/icons/hicolor/${size}x${size}/apps/$ID.png"; done
}

refresh_caches() {
  if command -v update-desktop-database >/dev/null; then
    update-desktop-database -q "$PREFIX/share/applications" 2>/dev/null || true
  fi
  if command -v gtk-update-icon-cache >/dev/null && [ -f "$PREFIX/share/icons/hicolor/index.theme" ]; then
    gtk-update-icon-cache -q -t "$PREFIX/share/icons/hicolor" 2>/dev/null || true
  fi
}

if [ "$UNINSTALL" = 1 ]; then
  installed_files | while read -r f; do rm -f "$f"; done
  rm -rf "$PREFIX/lib/boris-desktop"
  refresh_caches
  echo "removed Boris Desktop from $PREFIX"
  exit 0
fi

if [ ! -x "$BUNDLE/boris-desktop" ]; then
  echo "install-bundle: no bundle at $BUNDLE; build it with: bash packaging/build-bundle.sh" >&2
  exit 1
fi
mkdir -p "$PREFIX/lib" "$PREFIX/bin"
rm -rf "$PREFIX/lib/boris-desktop.new"
cp -a "$BUNDLE" "$PREFIX/lib/boris-desktop.new"
rm -rf "$PREFIX/lib/boris-desktop.new/share"
rm -rf "$PREFIX/lib/boris-desktop"
mv "$PREFIX/lib/boris-desktop.new" "$PREFIX/lib/boris-desktop"
ln -sfn "$PREFIX/lib/boris-desktop/boris-desktop" "$PREFIX/bin/boris-desktop"
ln -sfn "$PREFIX/lib/boris-desktop/boris" "$PREFIX/bin/boris"
(cd "$BUNDLE/share" && find . -type f) | while read -r f; do
  install -Dm644 "$BUNDLE/share/$f" "$PREFIX/share/$f"
done
refresh_caches
echo "installed Boris Desktop into $PREFIX (bin/boris-desktop, bin/boris)"
case ":$PATH:" in
  *":$PREFIX/bin:"*) ;;
  *) echo "note: $PREFIX/bin is not on PATH; the menu entry runs 'boris-desktop' from PATH" ;;
esac
