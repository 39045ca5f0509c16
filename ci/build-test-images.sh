#!/usr/bin/env bash
# Builds the Docker images the tests need from Debian packages (no registry is reachable from CI), and reuses
# them when they are present and built from the same package versions.
#
#   ci/build-test-images.sh            # chalk-compute-test/busybox:latest (from busybox-static), about a second
#   ci/build-test-images.sh debian     # also chalk-compute-test/debian:bookworm (debootstrap minbase), ~30 s
#   ci/build-test-images.sh jre        # also chalk-compute-test/jre:17 (the debian image + openjdk-17-jre-headless)
#   ci/build-test-images.sh jupyter    # also chalk-compute/jupyter:bookworm (the debian image + python3,
#                                      # jupyter-server, python3-ipykernel): the docker code-sandbox variant's image
#
# Needs a running Docker engine and the docker CLI; busybox-static (and debootstrap for debian) are installed from
# Debian's packages when missing (as root). The jre image installs its packages with apt inside a container of the
# debian image, on the host's network (it needs deb.debian.org, as debootstrap does).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

BUSYBOX_IMAGE=chalk-compute-test/busybox:latest
DEBIAN_IMAGE=chalk-compute-test/debian:bookworm
JRE_IMAGE=chalk-compute-test/jre:17
JRE_PACKAGE=openjdk-17-jre-headless
JUPYTER_IMAGE=chalk-compute/jupyter:bookworm
JUPYTER_PACKAGES="python3 jupyter-server python3-ipykernel"
LABEL=ai.chalk.compute.test-image.source
# what apt installed into an image built with apt, with versions (informative; reuse goes by $LABEL)
PACKAGES_LABEL=ai.chalk.compute.test-image.packages

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

# The function workers' image on the docker runtime: a Java 17 runtime (the major version the project builds for)
# from Debian's packages, on the debian image, so that only the JRE's packages are fetched. Its source label names
# the package and the debian image's own source, so it is rebuilt when that is; the packages label records the JRE
# version apt installed.
build_jre() {
  build_debian
  local source
  source="apt $JRE_PACKAGE on $(label_of "$DEBIAN_IMAGE")"
  if [ "$(label_of "$JRE_IMAGE")" = "$source" ]; then
    echo "test image $JRE_IMAGE is present ($source)"
    return
  fi
  local container version
  container=$(docker create --network host "$DEBIAN_IMAGE" sh -c "set -e
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends $JRE_PACKAGE >/dev/null
    rm -rf /var/cache/apt/archives/*.deb /var/cache/apt/*.bin /var/lib/apt/lists/*
    java -version")
  trap 'docker rm -f "$container" >/dev/null 2>&1 || true' RETURN
  if ! docker start -a "$container"; then
    echo "installing $JRE_PACKAGE in a container of $DEBIAN_IMAGE failed (see above)" >&2
    return 1
  fi
  version=$(docker cp "$container:/var/lib/dpkg/status" - | tar -xO | awk -v p="$JRE_PACKAGE" \
    '$1 == "Package:" { name = $2 } $1 == "Version:" && name == p { print $2 }')
  docker commit \
    --change 'CMD ["/bin/bash"]' \
    --change "LABEL $LABEL=\"$source\" $PACKAGES_LABEL=\"$JRE_PACKAGE=$version\"" \
    "$container" "$JRE_IMAGE" >/dev/null
  echo "built test image $JRE_IMAGE ($source; $JRE_PACKAGE $version)"
}

# The docker code-sandbox variant's image: a Jupyter server with a Python kernel from Debian's packages (code_sandboxes
# builds the same from its Dockerfile with pip; no package index is reachable here), with /workspace as the kernels'
# working directory. Same scheme as the JRE image: apt in a container of the debian image, then a commit.
build_jupyter() {
  build_debian
  local source
  source="apt $JUPYTER_PACKAGES on $(label_of "$DEBIAN_IMAGE")"
  if [ "$(label_of "$JUPYTER_IMAGE")" = "$source" ]; then
    echo "test image $JUPYTER_IMAGE is present ($source)"
    return
  fi
  local container version
  container=$(docker create --network host "$DEBIAN_IMAGE" sh -c "set -e
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends $JUPYTER_PACKAGES >/dev/null
    rm -rf /var/cache/apt/archives/*.deb /var/cache/apt/*.bin /var/lib/apt/lists/*
    mkdir -p /workspace
    jupyter-server --version")
  trap 'docker rm -f "$container" >/dev/null 2>&1 || true' RETURN
  if ! docker start -a "$container"; then
    echo "installing $JUPYTER_PACKAGES in a container of $DEBIAN_IMAGE failed (see above)" >&2
    return 1
  fi
  version=$(docker cp "$container:/var/lib/dpkg/status" - | tar -xO | awk \
    '$1 == "Package:" { name = $2 } $1 == "Version:" && (name == "jupyter-server" || name == "python3-ipykernel") { printf "%s=%s ", name, $2 }')
  docker commit \
    --change 'CMD ["/bin/bash"]' \
    --change 'WORKDIR /workspace' \
    --change "LABEL $LABEL=\"$source\" $PACKAGES_LABEL=\"${version% }\"" \
    "$container" "$JUPYTER_IMAGE" >/dev/null
  echo "built test image $JUPYTER_IMAGE ($source; ${version% })"
}

build_busybox
for extra in "$@"; do
  case "$extra" in
    debian) build_debian ;;
    jre) build_jre ;;
    jupyter) build_jupyter ;;
    busybox) ;;
    *) echo "unknown image: $extra (known: busybox, debian, jre, jupyter)" >&2; exit 2 ;;
  esac
done
