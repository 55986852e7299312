#!/bin/sh
# The do-it-yourself waker the wake benchmark compares reveille with: what a
# user would write in five minutes. inotifywait reports every plan file that
# a writer closed; the loop finds the first unchecked step with grep and sed
# and writes it, NUL-terminated, to the session's FIFO. No dependencies, no
# state, no routing: the floor of what "a waker" means, in shell.
#
# usage: diy-waker.sh PLAN_DIR FIFO
# stderr says "Watches established." once inotifywait is watching.
dir=$1
fifo=$2
inotifywait -m -e close_write --format '%w%f' "$dir" | while IFS= read -r f; do
    case $f in
        *.md) ;;
        *) continue ;;
    esac
    step=$(grep -m1 '^- \[ \] ' "$f" | sed 's/^- \[ \] //')
    [ -n "$step" ] || continue
    printf 'Next step of %s: %s\0' "$(basename "$f")" "$step" >"$fifo"
done
