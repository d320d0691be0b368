# Shared by scripts/demo.sh and scripts/test.sh: Debian 12 packages and the build.
# shellcheck shell=bash

# Everything the build, the tests and the benchmarks need, by Debian 12 package name.
POLYTOPE_PACKAGES=(
  cmake ninja-build g++ pkg-config git
  libasio-dev libflatbuffers-dev flatbuffers-compiler libspdlog-dev libcli11-dev nlohmann-json3-dev
  catch2 libqhull-dev libbullet-dev libccd-dev libcpp-httplib-dev libsodium-dev
  libglfw3-dev libgl-dev libgl1-mesa-dri libimgui-dev libstb-dev xvfb xauth
  libtinygltf-dev libtinyobjloader-dev liblua5.4-dev
)
# docker/test.sh: podman and what it needs to build a base image without a registry.
POLYTOPE_CONTAINER_PACKAGES=(podman runc conmon catatonit debootstrap containernetworking-plugins iptables uidmap)
# scripts/check_tree.sh: the formatter the committed .clang-format is written for (Debian 12: version 14).
POLYTOPE_CHECK_PACKAGES=(clang-format git)
# scripts/examples_structured.sh: the structured-snapshot readers of examples/ (Python and Node). Debian's
# nodejs and npm only where no node or npm is installed: a Node from elsewhere (NodeSource's, as on the
# development machines) brings its own npm, and Debian's npm package conflicts with it.
POLYTOPE_EXAMPLES_PACKAGES=(python3-flatbuffers)
command -v node >/dev/null 2>&1 || POLYTOPE_EXAMPLES_PACKAGES+=(nodejs)
command -v npm >/dev/null 2>&1 || POLYTOPE_EXAMPLES_PACKAGES+=(npm)
# scripts/fuzz.sh: clang with libFuzzer's runtime.
POLYTOPE_FUZZ_PACKAGES=(clang libclang-rt-14-dev)

# Installs the packages that are missing (skips apt entirely when none are).
polytope_ensure_packages() {
  local missing=() p
  for p in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$p")
    fi
  done
  if [ ${#missing[@]} -eq 0 ]; then
    return 0
  fi
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
      echo "error: missing packages (${missing[*]}) and not root; run as root or install sudo" >&2
      return 1
    fi
  fi
  echo "== installing: ${missing[*]}"
  # Waits for a dpkg lock held by another install (CI runs docker/test.sh beside the builds).
  $sudo apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends \
    "${missing[@]}"
}

# Configures and builds one CMake preset (release, debug, asan), optionally only some targets.
polytope_build() {
  local preset="$1"; shift
  cmake --preset "$preset" >/dev/null
  if [ $# -gt 0 ]; then
    cmake --build --preset "$preset" --target "$@"
  else
    cmake --build --preset "$preset"
  fi
}
