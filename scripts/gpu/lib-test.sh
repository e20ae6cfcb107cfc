#!/usr/bin/env bash
# Host test of lib.sh's gpu_sanitize (no GPU): a stand-in compute-sanitizer
# prints each tool's summary format, clean or not. Run: bash scripts/gpu/lib-test.sh
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/scripts/gpu/lib.sh"
fake=$(mktemp -d); trap 'rm -rf "$fake"' EXIT
cat >"$fake/compute-sanitizer" <<'FAKE'
#!/usr/bin/env bash
# Stand-in: prints the summary named by $FAKE_CS (after the program's own output), exits $FAKE_RC.
echo "========= COMPUTE-SANITIZER"
while [ "${1:0:2}" = -- ]; do shift 2; done   # --tool T --error-exitcode 1
"$@"
case $FAKE_CS in
mem0) echo "========= ERROR SUMMARY: 0 errors" ;;
mem3) echo "========= ERROR SUMMARY: 3 errors" ;;
mem10) echo "========= ERROR SUMMARY: 10 errors" ;;
race0) echo "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)" ;;
race_err) echo "========= RACECHECK SUMMARY: 2 hazards displayed (2 errors, 0 warnings)" ;;
race_warn) echo "========= RACECHECK SUMMARY: 1 hazard displayed (0 errors, 1 warning)" ;;
race10) echo "========= RACECHECK SUMMARY: 10 hazards displayed (0 errors, 10 warnings)" ;;
race_plus_mem) echo "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)"; echo "========= ERROR SUMMARY: 1 error" ;;
none) ;;
esac
exit ${FAKE_RC:-0}
FAKE
chmod +x "$fake/compute-sanitizer"
PATH=$fake:$PATH
bad=0
t() { # TOOL FAKE_CS FAKE_RC WANT(ok|FAILED)
    gpu_begin >/dev/null 2>&1; _failed=0; _checks=0
    out=$(FAKE_CS=$2 FAKE_RC=$3 gpu_sanitize "$1/$2/rc$3" "$1" "test result: ok" -- echo "test result: ok. 1 passed")
    got=$(grep -Eo -- '--- .*: (ok|FAILED)' <<<"$out" | grep -Eo '(ok|FAILED)$')
    printf '%-10s %-14s rc=%s want=%-6s got=%s\n' "$1" "$2" "$3" "$4" "$got"
    [ "$got" = "$4" ] || { bad=1; echo "$out"; }
}
t memcheck mem0 0 ok
t memcheck mem3 1 FAILED
t memcheck mem3 0 FAILED
t memcheck mem10 0 FAILED
t memcheck race0 0 FAILED
t memcheck none 0 FAILED
t racecheck race0 0 ok
t racecheck race_err 1 FAILED
t racecheck race_err 0 FAILED
t racecheck race_warn 0 FAILED
t racecheck race10 0 FAILED
t racecheck mem0 0 FAILED
t racecheck race_plus_mem 0 FAILED
t racecheck none 0 FAILED
t synccheck mem0 0 ok
[ $bad = 0 ] && echo "gpu_sanitize: all cases as expected" || { echo "gpu_sanitize: some cases wrong"; exit 1; }
