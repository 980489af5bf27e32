#!/usr/bin/env bash
# Checks every relative link in README.md and the book's pages (docs/*.md):
# the file it names must exist, and an #anchor must be a heading of that
# file (or of the page itself), with headings turned into anchors as
# mdBook does: lower case, letters, digits, `-` and `_` kept, spaces made
# `-`, everything else dropped; a repeated heading gets `-1`, `-2`...
# Links to the web (http:, https:, mailto:) are left alone: CI has no
# network. Code blocks and `code spans` are not searched for links.
# Exits 1 after naming every dead link as FILE:LINE: LINK (why).
set -euo pipefail
cd "$(dirname "$0")/.."

# The anchors of a Markdown file, one a line.
anchors() {
    awk '
        /^[ \t]*(```|~~~)/ { code = !code; next }
        code { next }
        /^#+[ \t]/ {
            h = $0
            sub(/^#+[ \t]+/, "", h); sub(/[ \t]+#*[ \t]*$/, "", h)
            gsub(/`/, "", h)
            # [text](target) -> text
            while (match(h, /\[[^]]*\]\([^)]*\)/)) {
                t = substr(h, RSTART, RLENGTH); sub(/^\[/, "", t); sub(/\]\(.*$/, "", t)
                h = substr(h, 1, RSTART - 1) t substr(h, RSTART + RLENGTH)
            }
            id = ""
            for (i = 1; i <= length(h); i++) {
                c = substr(h, i, 1)
                if (c ~ /[A-Za-z0-9_-]/) id = id tolower(c)
                else if (c ~ /[ \t]/) id = id "-"
            }
            if (id in seen) { n = seen[id]++; print id "-" n } else { seen[id] = 1; print id }
        }
    ' "$1"
}

# The relative links of a Markdown file: LINE<TAB>TARGET, one a line.
links() {
    awk '
        /^[ \t]*(```|~~~)/ { code = !code; next }
        code { next }
        {
            l = $0
            gsub(/`[^`]*`/, "", l)
            while (match(l, /\]\([^) ]+\)/)) {
                t = substr(l, RSTART + 2, RLENGTH - 3)
                l = substr(l, RSTART + RLENGTH)
                if (t !~ /^(https?|mailto):/) print NR "\t" t
            }
        }
    ' "$1"
}

dead=0
checked=0
for page in README.md docs/*.md; do
    dir=$(dirname "$page")
    while IFS=$'\t' read -r line target; do
        checked=$((checked + 1))
        path=${target%%#*}
        anchor=
        [[ $target == *"#"* ]] && anchor=${target#*#}
        if [ -z "$path" ]; then
            file=$page
        else
            file=$dir/$path
        fi
        if [ ! -e "$file" ]; then
            echo "$page:$line: $target (no file $file)" >&2
            dead=$((dead + 1))
            continue
        fi
        if [ -n "$anchor" ]; then
            if [[ $file != *.md ]]; then
                echo "$page:$line: $target (an anchor in a file that is not Markdown)" >&2
                dead=$((dead + 1))
            elif ! anchors "$file" | grep -qxF -- "$anchor"; then
                echo "$page:$line: $target (no heading for #$anchor in $file)" >&2
                dead=$((dead + 1))
            fi
        fi
    done < <(links "$page")
done
if [ "$dead" -gt 0 ]; then
    echo "check-links.sh: $dead dead link(s) of $checked" >&2
    exit 1
fi
echo "check-links.sh: $checked relative links in README.md and docs/*.md, all resolve"
