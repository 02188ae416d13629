#!/usr/bin/env bash
# Builds what an offline site installs roce-gen from, into target/release-artifacts/ (or -o DIR):
#   roce-gen_<version>-1_amd64.deb, roce-gen-<version>-1.x86_64.rpm,
#   roce-gen-<version>-x86_64-linux.tar.gz and SHA256SUMS over the three.
# The binary is linked against glibc 2.17 (zig's glibc stubs) so that it runs on RHEL 8, Ubuntu
# 20.04, Debian 11 and anything newer, not only on the glibc of the machine that built it.
#
# Needs cargo and python3. The packaging tools come from crates.io and PyPI and are installed
# once into ROCE_GEN_TOOLS (default /var/cache/roce-gen/tools), outside the checkout.
#
#   bash scripts/release.sh [-o DIR]
set -euo pipefail
cd "$(dirname "$0")/.."

out=target/release-artifacts
while (($#)); do
  case "$1" in
    -o) out="${2:?-o needs a folder}"; shift 2 ;;
    -h | --help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "release.sh: unknown argument '$1' (usage: bash scripts/release.sh [-o DIR])" >&2; exit 2 ;;
  esac
done

# Pinned so that two machines build the same packages; bump them together, on purpose.
zigbuild_version=0.24.1
deb_version=3.8.0
rpm_version=0.21.1
ziglang_version=0.17.1

tools="${ROCE_GEN_TOOLS:-/var/cache/roce-gen/tools}"
if ! "$tools/bin/cargo-zigbuild" --version 2>/dev/null | grep -qF " $zigbuild_version" ||
  ! "$tools/bin/cargo-deb" --version 2>/dev/null | grep -qF "$deb_version" ||
  ! "$tools/bin/cargo-generate-rpm" --version 2>/dev/null | grep -qF "$rpm_version"; then
  echo "release: installing the packaging tools into $tools"
  cargo install --locked --quiet --root "$tools" "cargo-zigbuild@$zigbuild_version" \
    "cargo-deb@$deb_version" "cargo-generate-rpm@$rpm_version"
fi
if ! "$tools/venv/bin/python3" -m ziglang version 2>/dev/null | grep -qxF "$ziglang_version"; then
  echo "release: installing zig $ziglang_version (the ziglang wheel) into $tools/venv"
  rm -rf "$tools/venv"
  python3 -m venv "$tools/venv"
  "$tools/venv/bin/pip" install --quiet --disable-pip-version-check "ziglang==$ziglang_version"
fi
# cargo-zigbuild runs `python3 -m ziglang`: the venv's python3 must come first.
export PATH="$tools/venv/bin:$tools/bin:$PATH"

version="$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)"
target_dir="${CARGO_TARGET_DIR:-target}"
triple=x86_64-unknown-linux-gnu
bin="$target_dir/$triple/release/roce-gen"
# File dates in the archives come from the last commit, so a rebuild of the same commit gives
# the same tarball.
SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}"
export SOURCE_DATE_EPOCH

echo "release: building roce-gen $version for $triple with glibc 2.17"
# The suffix .2.17 picks the glibc version zig links against; the binary lands in $triple/.
CARGO_PROFILE_RELEASE_STRIP=symbols cargo zigbuild --release --locked --target "$triple.2.17"

# A symbol newer than GLIBC_2.17 would make the binary refuse to start on older hosts.
newest="$(objdump -T "$bin" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -n 1)"
if [ "$(printf '%s\n2.17\n' "$newest" | sort -V | tail -n 1)" != 2.17 ]; then
  echo "release: $bin needs GLIBC_$newest, newer than 2.17" >&2
  exit 1
fi

# The man page and completions come from the binary itself, so they match its options. The
# package metadata in Cargo.toml takes them from target/pkg-files.
files=target/pkg-files
rm -rf "$files"
mkdir -p "$files"
# roce-gen(1) and one roce-gen-SUBCOMMAND(1) per subcommand, the pages roce-gen(1) refers to.
"$bin" --quiet man --dir "$files/man"
for page in "$files"/man/*.1; do
  gzip -9 -n -c "$page" >"$page.gz"
done
"$bin" completions bash >"$files/roce-gen.bash"
"$bin" completions zsh >"$files/_roce-gen"
"$bin" completions fish >"$files/roce-gen.fish"

mkdir -p "$out"
rm -f "$out"/roce-gen[_-]"$version"* "$out/SHA256SUMS"

echo "release: packaging the .deb"
# Built and stripped above; cargo-deb only packs it.
cargo deb --no-build --no-strip --target "$triple" --output "$out" >/dev/null

echo "release: packaging the .rpm"
# gzip rather than the default zstd payload, which older rpm versions cannot unpack.
cargo generate-rpm --target "$triple" --payload-compress gzip --output "$out/"

echo "release: packing the tarball"
name="roce-gen-$version-x86_64-linux"
stage="target/pkg-stage/$name"
rm -rf "target/pkg-stage"
mkdir -p "$stage/man" "$stage/completions" "$stage/docs"
install -m 755 "$bin" "$stage/roce-gen"
install -m 644 "$files"/man/*.1 "$stage/man/"
install -m 644 "$files/roce-gen.bash" "$files/_roce-gen" "$files/roce-gen.fish" "$stage/completions/"
install -m 644 README.md CHANGELOG.md LICENSE-MIT LICENSE-APACHE "$stage/"
# The README's links to docs/ resolve in the unpacked tree, as in the packages' doc folder.
install -m 644 docs/*.md "$stage/docs/"
tar -C target/pkg-stage --sort=name --owner=0 --group=0 --numeric-owner \
  --mtime="@$SOURCE_DATE_EPOCH" -cf - "$name" | gzip -9 -n >"$out/$name.tar.gz"

(cd "$out" && sha256sum -- roce-gen_"$version"-*.deb roce-gen-"$version"-*.rpm "$name.tar.gz" >SHA256SUMS)
echo "release: in $out (the binary needs at most GLIBC_$newest):"
(cd "$out" && ls -l -- roce-gen[_-]"$version"* SHA256SUMS)
