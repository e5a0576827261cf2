# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Shared settings for the softrvt scripts; sourced, not run.

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Slow artefacts (kernel builds, guest root) live outside the clone so a
# fresh clone reuses them.
CACHE=${SOFTRVT_CACHE:-/var/cache/softrvt}
mkdir -p "$CACHE"

log() { printf '[softrvt] %s\n' "$*" >&2; }

# Install the Debian packages named that are missing; nothing when all
# are there, so that a script can call it on every run.
ensure_pkgs() { # package...
	local missing=() p

	for p in "$@"; do
		dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null |
			grep -q '^install ok installed$' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	log "installing ${missing[*]}"
	# make check runs some of its scripts side by side: wait for
	# another's apt rather than fail.
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 \
		update -q >&2
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 \
		install -y -q --no-install-recommends "${missing[@]}" >&2
}

# The Debian archive this machine's apt already uses (its sources list, in
# either format), so that a local mirror or proxy serves the scripts too:
# the first enabled "deb" entry for a Debian release with "main".
# SOFTRVT_MIRROR overrides it.
debian_mirror() {
	local uri etc=${SOFTRVT_APT_ETC:-/etc/apt}
	if [ -n "${SOFTRVT_MIRROR:-}" ]; then
		echo "$SOFTRVT_MIRROR"
		return
	fi
	uri=$(awk '
		function want(types, uris, suites, comps) {
			if (types !~ /(^| )deb( |$)/ || comps !~ /(^| )main( |$)/)
				return 0
			if (uris ~ /security/)
				return 0
			return suites ~ /(^| )(buster|bullseye|bookworm|trixie|forky|sid|stable|oldstable|testing|unstable)( |$)/
		}
		function flush() {
			if (enabled && want(t, u, s, c) && !found) {
				split(u, a, " ")
				print a[1]
				found = 1
			}
			t = u = s = c = ""
			enabled = 1
		}
		BEGIN { enabled = 1 }
		FNR == 1 { flush() }
		FILENAME ~ /\.list$/ {
			sub(/#.*/, "")
			gsub(/\[[^]]*\]/, "")
			$0 = $0
			comps = ""
			for (j = 4; j <= NF; j++)
				comps = comps " " $j
			if (want($1, $2, $3, comps) && !found) {
				print $2
				found = 1
			}
			next
		}
		/^[ \t]*#/ { next }
		/^[ \t]*$/ { flush(); next }
		{
			key = tolower($1)
			val = $0
			sub(/^[^:]*:[ \t]*/, "", val)
			if (key == "types:") t = val
			else if (key == "uris:") u = val
			else if (key == "suites:") s = val
			else if (key == "components:") c = val
			else if (key == "enabled:" && tolower(val) == "no") enabled = 0
		}
		END { flush() }
	' $(ls "$etc/sources.list" "$etc"/sources.list.d/*.list \
		"$etc"/sources.list.d/*.sources 2>/dev/null))
	# apt's mirror method names a file listing the mirrors.
	case "$uri" in
	mirror+file:*)
		uri=$(grep -m1 -E '^[a-z]+://' "${uri#mirror+file:}" | awk '{ print $1 }')
		;;
	esac
	if [ -z "$uri" ]; then
		log "no Debian archive in $etc/sources.list{,.d}: set SOFTRVT_MIRROR"
		return 1
	fi
	echo "${uri%/}"
}

# An empty directory for apt to download into, as its unprivileged _apt
# user where that user exists (else apt downloads as root, and says so).
apt_download_dir() { # DIR
	rm -rf "$1"
	mkdir -p "$1"
	chown _apt "$1" 2>/dev/null || true
}

# apt-get for one suite of the machine's Debian archive, through a
# configuration of its own in DIR: the machine's sources stay as they
# are, and apt still checks what it fetches against the suite's signed
# index.  TYPE is deb or deb-src.  Downloads land in the current directory.
apt_suite() { # DIR TYPE SUITE apt-get-arguments...
	local etc=$1 type=$2 suite=$3
	shift 3
	mkdir -p "$etc/lists/partial" "$etc/cache/archives/partial"
	echo "$type [check-valid-until=no] $(debian_mirror) $suite main" \
		> "$etc/sources.list"
	local opts=(-o "Dir::Etc::sourcelist=$etc/sources.list"
		    -o "Dir::Etc::sourceparts=/nonexistent"
		    -o "Dir::State::Lists=$etc/lists"
		    -o "Dir::Cache=$etc/cache")
	apt-get "${opts[@]}" update -q >&2 &&
		apt-get "${opts[@]}" "$@" >&2
}

# An empty directory to debootstrap into.  debootstrap mounts /proc, and
# in a container binds the host's /dev and /sys, inside its target; when
# it is killed those mounts stay, and rm -rf would walk into them.  So
# what an earlier, killed build left mounted under DIR is unmounted
# first, deepest first, and rm never leaves DIR's file system.
fresh_dir() { # DIR
	local m

	for m in $(awk -v d="$1/" 'index($2, d) == 1 { print $2 }' \
			/proc/self/mounts | sort -r); do
		umount -l "$m"
	done
	rm -rf --one-file-system "$1"
	mkdir -p "$1"
}

# debootstrap in a mount namespace of its own: its mounts end with it,
# even when it is killed.
debootstrap_private() { # debootstrap-arguments...
	unshare -m debootstrap "$@"
}

# debootstrap does not read apt's configuration: hand it apt's proxy.
apt_proxy_env() {
	local proxy=""
	eval "$(apt-config shell proxy Acquire::http::Proxy)"
	if [ -n "$proxy" ] && [ -z "${http_proxy:-}" ]; then
		export http_proxy=$proxy
	fi
}
