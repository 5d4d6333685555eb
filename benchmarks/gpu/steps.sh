# Sourced by device_check.sh and final_check.sh: the one `step` runner they share.
# Expects TOTAL_BUDGET, T_START and SUMMARY set; STEP_MIN_LEFT (seconds below which a
# step is skipped), STEP_KILL_AFTER (grace after the timeout) and STEP_WIDTH (name
# column) may be set by the caller.
#
# step NAME TIMEOUT LOGFILE CMD...: run under a timeout (cut to the budget left),
# append output to LOGFILE, note status and seconds in summary.txt
step() {
    local name=$1 limit=$2 log=$3; shift 3
    local width=${STEP_WIDTH:-24}
    local t0=$(date +%s)
    local left=$(( TOTAL_BUDGET - (t0 - T_START) ))
    if [ $left -lt "${STEP_MIN_LEFT:-10}" ]; then
        printf "%-${width}s %s\n" "$name" "SKIPPED (overall budget spent)" | tee -a "$SUMMARY"
        return 0
    fi
    [ $limit -gt $left ] && limit=$left
    echo "===== $name (limit ${limit}s) =====" >> "$log"
    timeout --kill-after="${STEP_KILL_AFTER:-5}" "$limit" "$@" >> "$log" 2>&1
    local rc=$?
    local dt=$(( $(date +%s) - t0 ))
    local what="rc=$rc"
    { [ $rc -eq 124 ] || [ $rc -eq 137 ]; } && what="TIMEOUT after ${limit}s"
    printf "%-${width}s %-22s %4ss  (total %ss)\n" "$name" "$what" "$dt" \
        "$(( $(date +%s) - T_START ))" | tee -a "$SUMMARY"
    return 0
}
