#!/usr/bin/env bash
# Builds the Docker images the tests need from Debian packages (no registry is reachable from CI), and reuses
# them when they are present and built from the same package versions.
#
#   ci/build-test-images.sh            # chalk-compute-test/busybox:latest (from busybox-static), about a second
#   ci/build-test-images.sh debian     # also chalk-compute-test/debian:bookworm (debootstrap minbase), ~30 s
#
# Needs a running Docker engine and the docker CLI; busybox-static (and debootstrap for debian) are installed from
# Debian's packages when missing (as root).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

BUSYBOX_IMAGE=chalk-compute-test/busybox:latest
DEBIAN_IMAGE=chalk-compute-test/debian:bookworm
LABEL=ai.chalk.compute.test-image.source

install_packages() {
  apt-get update -qq && apt-get install -y -qq "$@" >/dev/null
}

# the label an image carries, or nothing when the image is absent
label_of() {
  docker image inspect --format "{{ index .Config.Labels \"$LABEL\" }}" "$1" 2>/dev/null || true
}

build_busybox() {
  # Debian's busybox-static is statically linked (the image has no libc); plain `busybox` is not, and conflicts
  dpkg-query -W -f '${Status}' busybox-static 2>/dev/null | grep -q 'ok installed' || install_packages busybox-static
  local bb=/bin/busybox source
  source="busybox-static $(dpkg-query -W -f '${Version}' busybox-static)"
  if [ "$(label_of "$BUSYBOX_IMAGE")" = "$source" ]; then
    echo "test image $BUSYBOX_IMAGE is present ($source)"
    return
  fi
  local root
  root=$(mktemp -d)
  trap 'rm -rf "$root"' RETURN
  mkdir -p "$root"/{bin,etc,root,tmp,proc,sys,dev,usr,var/tmp,home}
  chmod 1777 "$root/tmp" "$root/var/tmp"
  chmod 700 "$root/root"
  cp "$bb" "$root/bin/busybox"
  for applet in $("$bb" --list); do
    [ "$applet" = busybox ] || ln -sf busybox "$root/bin/$applet"
  done
  # one directory for every conventional PATH entry, so /usr/bin/env and friends resolve
  ln -s ../bin "$root/usr/bin"
  ln -s bin "$root/sbin"
  ln -s ../bin "$root/usr/sbin"
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' > "$root/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' > "$root/etc/group"
  tar -C "$root" -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["/bin/sh"]' \
    --change "LABEL $LABEL=\"$source\"" \
    - "$BUSYBOX_IMAGE" >/dev/null
  echo "built test image $BUSYBOX_IMAGE ($source)"
}

build_debian() {
  command -v debootstrap >/dev/null || install_packages debootstrap
  local suite=bookworm source
  source="debootstrap minbase $suite $(dpkg-query -W -f '${Version}' debootstrap)"
  if [ "$(label_of "$DEBIAN_IMAGE")" = "$source" ]; then
    echo "test image $DEBIAN_IMAGE is present ($source)"
    return
  fi
  local root
  root=$(mktemp -d)
  trap 'rm -rf "$root"' RETURN
  debootstrap --variant=minbase "$suite" "$root" >/dev/null
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  tar -C "$root" -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["/bin/bash"]' \
    --change "LABEL $LABEL=\"$source\"" \
    - "$DEBIAN_IMAGE" >/dev/null
  echo "built test image $DEBIAN_IMAGE ($source)"
}

build_busybox
for extra in "$@"; do
  case "$extra" in
    debian) build_debian ;;
    busybox) ;;
    *) echo "unknown image: $extra (known: busybox, debian)" >&2; exit 2 ;;
  esac
done
