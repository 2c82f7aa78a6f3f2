#!/bin/bash
# usage: snapshot.sh DIR role1 role2 ...
set -e
D=$1; shift
ROLES=$(printf ', "%s"' "$@")
rm -rf $D && mkdir -p $D && (cd /work/main && git archive HEAD kbvqa tools | tar -x -C $D)
ln -s /work/main/data $D/data
sed -i "s/^CPU_READER_ROLES = frozenset({\(.*\)})/CPU_READER_ROLES = frozenset({\1$ROLES})/" $D/kbvqa/config.py
grep "^CPU_READER_ROLES" $D/kbvqa/config.py
