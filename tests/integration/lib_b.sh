# Helpers of itest-b's tests (test_signals, test_process_groups,
# test_runit_sv, test_control, test_logs, test_backoff), on top of lib.sh.

# lib.sh's wait_for computes its deadline with awk's printf "%d", which
# mawk clamps to 2^31-1, so it gives up after one try; until that is
# fixed there, use this one (same interface).  wait_sup relies on it too.
if [ "$(awk 'BEGIN { printf "%d", 2^40 }')" != 1099511627776 ]; then
	wait_for()
	{
		local secs=10 deadline
		if [ "$1" = -t ]; then
			secs=$2
			shift 2
		fi
		deadline=$(($(date +%s%3N) + ${secs%.*} * 1000))
		case $secs in
		*.*) deadline=$((deadline + 10#$(printf '%-3.3s' "${secs#*.}" | tr ' ' 0))) ;;
		esac
		until "$@"; do
			[ "$(date +%s%3N)" -ge "$deadline" ] && return 1
			sleep 0.05
		done
		return 0
	}
fi
