# Sourced by the device check scripts: their common setup and the one `step` runner
# they share. STEP_MIN_LEFT (seconds below which a step is skipped), STEP_KILL_AFTER
# (grace after the timeout) and STEP_WIDTH (name column) may be set by the caller.
#
# steps_begin NAME BUDGET: OUT (default /tmp/NAME_out) made, ROOT (the repository root:
# the working directory), PY (default python3), TOTAL_BUDGET (default BUDGET seconds,
# for everything: later steps get what is left), SUMMARY ($OUT/summary.txt) emptied,
# T_START now
steps_begin() {
    OUT=${OUT:-/tmp/$1_out}
    mkdir -p "$OUT"
    ROOT=$(pwd)
    PY=${PY:-python3}
    TOTAL_BUDGET=${TOTAL_BUDGET:-$2}
    SUMMARY="$OUT/summary.txt"
    : > "$SUMMARY"
    T_START=$(date +%s)
}

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
