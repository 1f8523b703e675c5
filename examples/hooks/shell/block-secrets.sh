#!/bin/sh
# block-secrets.sh: a Claude Code compatible PreToolUse command hook that
# refuses writes and edits of files that usually hold secrets: .env files,
# private keys and certificates (*.pem, *.key, *.p12, *.pfx), SSH private
# keys (id_rsa, id_ed25519, ...) and .netrc. Templates such as .env.example
# and public keys (*.pub) are allowed.
#
# It reads the hook input (JSON) on stdin and needs only POSIX sh, tr and
# sed: no jq, no python. Exit 0 allows; exit 2 blocks, and what it prints on
# stderr is the reason the agent and the user see.
#
# Register it in .weave/config.yaml (or Claude Code's settings.json):
#
#   hooks:
#     PreToolUse:
#       - matcher: Write|Edit
#         hooks:
#           - type: command
#             command: sh "$CLAUDE_PROJECT_DIR/.weave/hooks/block-secrets.sh"

# One line, so that sed sees pretty-printed input whole.
input=$(tr -d '\n\r')

# field NAME: the first string value of "NAME" in the input. Escaped quotes
# inside other strings (\"file_path\") never match, because the pattern needs
# a bare quote right after the name.
field() {
	printf '%s' "$input" | sed -n "s/.*\"$1\"[[:space:]]*:[[:space:]]*\"\([^\"]*\)\".*/\1/p"
}

case $(field tool_name) in
Write | Edit | MultiEdit | NotebookEdit) ;;
*) exit 0 ;;
esac

path=$(field file_path)
[ -n "$path" ] || path=$(field notebook_path)
[ -n "$path" ] || exit 0
name=${path##*/}

case $name in
.env.example | .env.sample | .env.template | .env.dist | *.pub)
	exit 0
	;;
.env | .env.* | *.pem | *.key | *.p12 | *.pfx | id_rsa | id_dsa | id_ecdsa | id_ed25519 | .netrc)
	echo "block-secrets: refusing to write $path: it looks like a file that holds secrets; ask the user to change it themselves" >&2
	exit 2
	;;
esac
exit 0
