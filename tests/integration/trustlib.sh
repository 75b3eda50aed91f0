# A second, unprivileged user for the trust tests (esv-supervise(8),
# "Trust"): source it after lib.sh and call trust_user first.
#	trust_user	make (or reuse) the user esv-trust: sets TU, TUID,
#			TGID; lets it pass through $T (mode 0711); skips
#			with the reason when this cannot be done
#	as_user CMD...	run CMD as that user, without supplementary groups
#	as_nobody CMD...	the same as nobody, a third user

trust_user()
{
	[ "$(id -u)" = 0 ] || skip "needs root, to act as a second user"
	command -v setpriv >/dev/null || skip "setpriv(1) is not installed"
	TU=esv-trust
	# Tests run in parallel: a useradd may find /etc/passwd locked.
	wait_for -t 20 trust_have_user ||
	    skip "unable to create the user $TU (useradd failed)"
	TUID=$(id -u "$TU")
	TGID=$(id -g "$TU")
	chmod 0711 "$T"
}

trust_have_user()
{
	id -u "$TU" >/dev/null 2>&1 && return 0
	command -v useradd >/dev/null || return 1
	useradd --system --no-create-home --home-dir /nonexistent \
	    --shell /usr/sbin/nologin "$TU" >/dev/null 2>&1
	id -u "$TU" >/dev/null 2>&1
}

as_user()
{
	setpriv --reuid="$TUID" --regid="$TGID" --clear-groups -- "$@"
}

# The attacker when esv-trust is the victim.
as_nobody()
{
	setpriv --reuid="$(id -u nobody)" --regid="$(id -g nobody)" \
	    --clear-groups -- "$@"
}
