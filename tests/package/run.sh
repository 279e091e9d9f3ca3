#!/bin/sh
# Builds and runs tests/package/consumer.cpp in one way of use, in a scratch directory.
# usage: run.sh KIND SOURCE_DIR WORK_DIR
#   KIND: readme_install | install_without_build | find_package | add_subdirectory | fetchcontent | pkgconfig | meson_subproject | single_header
set -eu
kind=$1 src=$(cd "$2" && pwd) work=$3
here="$src/tests/package"
rm -rf "$work" && mkdir -p "$work"
cxx=${CXX:-c++}
install_prefix() {  # installs hetlaunch from a fresh configure into $work/prefix
  cmake -S "$src" -B "$work/hetlaunch-build" -DHETLAUNCH_BUILD_TESTS=OFF -DHETLAUNCH_BUILD_EXAMPLES=OFF \
        -DHETLAUNCH_INSTALL=ON -DCMAKE_INSTALL_PREFIX="$work/prefix" >/dev/null
  cmake --install "$work/hetlaunch-build" >/dev/null
}
case "$kind" in
  readme_install)
    # The README's install command, word for word but for the prefix, from a clean copy.
    git clone -q "$src" "$work/repo"
    (cd "$work/repo" && cmake -S . -B build -DHETLAUNCH_BUILD_TESTS=OFF >/dev/null && cmake --build build >/dev/null &&
       cmake --install build --prefix "$work/prefix" >/dev/null)
    "$work/prefix/bin/hetlaunch" --version >/dev/null
    # The manual page and the completion scripts, where man and bash-completion look.
    grep -q '^\.TH HETLAUNCH 1' "$work/prefix/share/man/man1/hetlaunch.1"
    grep -q 'complete .*-F _hetlaunch hetlaunch' "$work/prefix/share/bash-completion/completions/hetlaunch"
    grep -q '^#compdef hetlaunch' "$work/prefix/share/zsh/site-functions/_hetlaunch"
    grep -q 'CMAKE_BUILD_TYPE:STRING=Release' "$work/repo/build/CMakeCache.txt"
    cmake -S "$here/cmake_find_package" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
    cmake --build "$work/build" >/dev/null
    "$work/build/consumer" ;;
  install_without_build)
    # `cmake --install` of a configured tree that was never built: the headers, the CMake package
    # and the .pc file, as a header-only library installs (the command is installed when built).
    cmake -S "$src" -B "$work/hetlaunch-build" -DHETLAUNCH_BUILD_TESTS=OFF >/dev/null
    cmake --install "$work/hetlaunch-build" --prefix "$work/prefix" >/dev/null
    test -f "$work/prefix/include/hetlaunch/hetlaunch.hpp"
    test -f "$work/prefix/share/pkgconfig/hetlaunch.pc"
    test ! -e "$work/prefix/bin/hetlaunch"
    cmake -S "$here/cmake_find_package" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
    cmake --build "$work/build" >/dev/null
    "$work/build/consumer" ;;
  find_package)
    install_prefix
    cmake -S "$here/cmake_find_package" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
    cmake --build "$work/build" >/dev/null
    "$work/build/consumer" ;;
  add_subdirectory)
    cmake -S "$here/cmake_add_subdirectory" -B "$work/build" -DHETLAUNCH_SOURCE_DIR="$src" >/dev/null
    cmake --build "$work/build" >/dev/null
    "$work/build/consumer" ;;
  fetchcontent)
    # A clone of this repository at its current commit, fetched as a dependency is.
    git clone -q "$src" "$work/repo"
    rev=$(git -C "$work/repo" rev-parse HEAD)
    cmake -S "$here/cmake_fetchcontent" -B "$work/build" -DHETLAUNCH_GIT_REPOSITORY="$work/repo" \
          -DHETLAUNCH_GIT_TAG="$rev" >/dev/null
    cmake --build "$work/build" >/dev/null
    "$work/build/consumer" ;;
  pkgconfig)
    install_prefix
    test -f "$work/prefix/share/pkgconfig/hetlaunch.pc"
    if grep -q '^Libs' "$work/prefix/share/pkgconfig/hetlaunch.pc"; then
      echo "hetlaunch.pc must not have a Libs: line (header-only)" >&2; exit 1
    fi
    flags=$(PKG_CONFIG_PATH="$work/prefix/share/pkgconfig" pkg-config --cflags hetlaunch)
    test "$(PKG_CONFIG_PATH="$work/prefix/share/pkgconfig" pkg-config --modversion hetlaunch)" = "$(cat "$src/VERSION")"
    # shellcheck disable=SC2086
    $cxx -std=c++17 $flags "$here/consumer.cpp" -o "$work/consumer"
    "$work/consumer" ;;
  meson_subproject)
    cp -r "$here/meson_subproject" "$work/project"
    cp "$here/consumer.cpp" "$work/consumer.cpp"
    mkdir -p "$work/project/subprojects"
    ln -s "$src" "$work/project/subprojects/hetlaunch"
    meson setup "$work/build" "$work/project" >/dev/null
    meson compile -C "$work/build" >/dev/null
    "$work/build/consumer" ;;
  single_header)
    $cxx -std=c++17 -Wall -Wextra -Werror -I"$src/single_include" "$here/consumer.cpp" -o "$work/consumer"
    "$work/consumer" ;;
  *) echo "unknown kind: $kind" >&2; exit 2 ;;
esac
