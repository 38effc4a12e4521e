#!/usr/bin/env bash
# `make test` (and `make lint`) first: the tools they need that no step installs, each named with the
# Debian/Ubuntu package that provides it, in one line on stdout (nothing: all there).
# Usage: need_tools.sh TOOL...
missing=()
for tool in "$@"; do
  case $tool in
    luacheck) package=lua-check ;;
    node) package=nodejs ;;
    *) package=$tool ;;
  esac
  if ! command -v "$tool" >/dev/null 2>&1; then
    missing+=("$tool ($package)")
  elif [[ $tool == node ]] && ! node -e 'process.exit(parseInt(process.versions.node) < 20 ? 1 : 0)' 2>/dev/null; then
    missing+=("node >= 20, found $(node --version 2>/dev/null) (nodejs)")
  fi
done
if ((${#missing[@]})); then
  joined=$(printf ', %s' "${missing[@]}")
  echo "missing ${joined:2}: install them (Debian/Ubuntu: apt-get install <package>) and run again"
fi
