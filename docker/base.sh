#!/usr/bin/env bash
# Make the Debian bookworm base image locally, for machines that reach a Debian mirror but no
# image registry: debootstrap a minimal root file system and `docker import` it.
#
#   docker/base.sh [TAG]        (default TAG: sessionsched/debian:bookworm; needs root)
#
# Where a registry is reachable, skip this and build the images FROM debian:bookworm-slim
# (the Dockerfile's default BASE). The result is close to that image: minbase variant, no apt
# lists, no docs, man pages or locales (dpkg is told to keep leaving them out).
# The mirror is $DEBIAN_MIRROR, else the first Debian URI apt uses here, else deb.debian.org.
# Does nothing when TAG exists already.
set -euo pipefail

tag=${1:-sessionsched/debian:bookworm}
if docker image inspect "$tag" >/dev/null 2>&1; then
    echo "$tag exists"
    exit 0
fi

mirror=${DEBIAN_MIRROR:-}
if [ -z "$mirror" ]; then
    mirror=$(sed -n 's#^URIs:[[:space:]]*\(\S*/debian\)/\?$#\1#p' \
        /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n1)
fi
mirror=${mirror:-http://deb.debian.org/debian}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/root

debootstrap --variant=minbase bookworm "$root" "$mirror"

# What debian:bookworm-slim leaves out, kept out of later apt-get installs too.
cat > "$root/etc/dpkg/dpkg.cfg.d/docker-slim" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
path-exclude /usr/share/lintian/*
EOF
cat > "$root/etc/apt/apt.conf.d/docker-clean" <<'EOF'
APT::Install-Recommends "false";
APT::Install-Suggests "false";
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/*.bin || true"; };
EOF
cat > "$root/etc/apt/sources.list" <<EOF
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb ${mirror%/debian}/debian-security bookworm-security main
EOF
find "$root/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
find "$root/usr/share/locale" -mindepth 1 -maxdepth 1 -not -name locale.alias \
    -exec rm -rf {} +
rm -rf "$root"/usr/share/{man,info,lintian}/* "$root"/var/lib/apt/lists/* \
    "$root"/var/cache/apt/* "$root"/var/log/* "$root"/tmp/*

tar --numeric-owner -C "$root" -c . | docker import --change 'CMD ["bash"]' - "$tag"
docker image ls "$tag"
