#!/usr/bin/env python3
"""The house's size rules for the daemon's sources (tests excluded): no file over 800 lines and
no function over 80 lines, except a data table marked with a `// size-check: table` comment on
the line before its body. Prints each offender and exits 1 if there is one.
Usage: scripts/check-size.py [max_function_lines [dir ...]]"""
import re, sys, os
limit = int(sys.argv[1]) if len(sys.argv) > 1 else 80
roots = sys.argv[2:] or ['daemon', 'protocol', 'storage']
MAX_FILE_LINES = 800
bad = 0

def strip(src):
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith('//', i):
            j = src.find('\n', i); j = n if j < 0 else j; out.append(' ' * (j - i)); i = j
        elif src.startswith('/*', i):
            j = src.find('*/', i + 2); j = n if j < 0 else j + 2
            out.append(re.sub(r'[^\n]', ' ', src[i:j])); i = j
        elif src.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', src[i:]); end = ')' + m.group(1) + '"'
            j = src.find(end, i); j = n if j < 0 else j + len(end)
            out.append(re.sub(r'[^\n]', ' ', src[i:j])); i = j
        elif c in '"\'':
            j = i + 1
            while j < n and src[j] != c:
                j += 2 if src[j] == '\\' else 1
            out.append(' ' * (j + 1 - i)); i = j + 1
        else:
            out.append(c); i += 1
    return ''.join(out)

for root in roots:
    for dp, _, fs in os.walk(root):
        for f in sorted(fs):
            if not f.endswith(('.cc', '.h')):
                continue
            p = os.path.join(dp, f)
            text = open(p, errors='replace').read()
            raw = text.split('\n')
            if len(raw) - 1 > MAX_FILE_LINES:
                print(f'{p}: {len(raw) - 1} lines (file limit {MAX_FILE_LINES})'); bad = 1
            s = strip(text)
            stack = []  # (kind, start_line)
            since = []  # text since last ; { }
            line = 1
            for ch in s:
                if ch == '\n':
                    line += 1
                if ch == '{':
                    head = ''.join(since)
                    inner = all(k in ('ns', 'cls') for k, _, _ in stack)
                    if inner and re.search(r'\)\s*(const|noexcept|override|final|->[^{]*|:[^{]*)*\s*$', head, re.S) \
                            and not re.search(r'\b(namespace|class|struct|enum|union)\b[^()]*$', head):
                        hl = head.strip().split('\n')
                        stack.append(('fn', line - len(hl) + 1 if hl else line, hl[0] if hl else ''))
                    elif inner and re.search(r'\b(namespace|class|struct|union)\b', head) and '=' not in head.split('\n')[-1]:
                        stack.append(('ns' if 'namespace' in head else 'cls', line, ''))
                    else:
                        stack.append(('blk', line, ''))
                    since = []
                elif ch == '}':
                    if stack:
                        k, start, name = stack.pop()
                        table = start >= 2 and 'size-check: table' in raw[start - 2]
                        if k == 'fn' and line - start + 1 > limit and not table:
                            print(f'{p}:{start}: {line - start + 1} lines: {name.strip()[:100]}'); bad = 1
                    since = []
                elif ch == ';':
                    since = []
                else:
                    since.append(ch)

sys.exit(bad)
