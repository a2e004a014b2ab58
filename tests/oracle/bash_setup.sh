# BASH_ENV file of the bash oracle (tests/oracle/harness.py); sourced by every non-interactive bash,
# the fixture itself and any `bash -c` it runs.
#
# A `bash -c` inherits __PL_LINE/__PL_FILE from its parent: keep them as the location of the command
# that started this shell, before the trap below overwrites them.
if [[ -n "${__PL_LINE-}" ]]; then
    __PL_PARENT_LINE=$__PL_LINE
    __PL_PARENT_FILE=${__PL_FILE-}
    export __PL_PARENT_LINE __PL_PARENT_FILE
fi
# -T: functions, command substitutions and subshells inherit the DEBUG trap.
set -T
# Before every simple command: where it is. LINENO of a command continued over several lines with
# backslashes is a line inside that range (not always the first); inside a `bash -c` string it counts
# from the start of the string and BASH_SOURCE is empty.
trap '__PL_LINE=$LINENO; __PL_FILE=${BASH_SOURCE[0]-}; export __PL_LINE __PL_FILE' DEBUG
