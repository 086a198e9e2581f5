# The first program of the sandbox of cookbookgen.recipes.script (bash, not the script's stubs): starts
# the benchmark script with the stubs, stops it at the time limit, ends every process it left and then
# reports the files of the record folder on its standard output, each as `name NUL size NUL bytes`
# (size -1 and no bytes: not a regular file), then `exit NUL size NUL status`.
# Its standard input is a pipe cookbookgen never writes to: a clock that `read -t` waits on.
# CBG_ISOLATED=1 only inside the sandbox's own PID namespace, where `kill -1` reaches nothing else.

if [[ $CBG_ISOLATED == 1 ]]; then
    ulimit -u "$CBG_LIMIT_PROCESSES" || exit 90     # counted in the sandbox's own user namespace
fi
out=$CBG_OUT
exec 9<&0 0</dev/null 8>&1 1>/dev/null
BASH_ENV=$CBG_STUBS "$CBG_BASH" --noprofile --norc "$CBG_SCRIPT" >"$out/stdout" 2>"$out/stderr" 8>&- 9<&- &
script=$!
{ read -r -t "$CBG_LIMIT_SECONDS" -u 9; : >"$out/timeout"; kill -TERM "$script"; } 8>&- 2>/dev/null &
wait "$script"
status=$?
if [[ $CBG_ISOLATED == 1 ]]; then
    kill -KILL -1 2>/dev/null   # every other process of the namespace: the clock and what the script left
else
    kill -KILL "$!" 2>/dev/null
fi
for file in "$out"/*; do
    [[ -e $file || -L $file ]] || continue
    if [[ -L $file || ! -f $file ]]; then
        printf '%s\0-1\0' "${file##*/}" >&8
    else
        size=$(wc -c <"$file")
        printf '%s\0%s\0' "${file##*/}" "$size" >&8
        head -c "$size" -- "$file" >&8
    fi
done
printf 'exit\0%s\0%s' "${#status}" "$status" >&8
