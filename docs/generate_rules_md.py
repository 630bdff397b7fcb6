"""Write docs/rules.md from the rules' own docstrings (the target of each finding's `url`).

    python docs/generate_rules_md.py
"""

from pathlib import Path


def render() -> str:
    from dynalint.lint.rules import all_rules

    out = ["# dynalint rules\n", "Generated from the rule modules by `python docs/generate_rules_md.py`.\n"]
    out.append("| code | name | severity | fix | summary |\n|---|---|---|---|---|\n")
    for r in all_rules():
        out.append(f"| [{r.code}](#{r.code.lower()}) | `{r.name}` | {r.severity} | {r.fixable or '-'} | {r.summary} |\n")
    for r in all_rules():
        docs = r.docs()
        title, _, body = docs.partition("\n")
        out.append(f"\n<a id=\"{r.code.lower()}\"></a>\n## {title}\n{body}\n")
    return "".join(out)


if __name__ == "__main__":
    path = Path(__file__).with_name("rules.md")
    path.write_text(render(), encoding="utf-8")
    print(f"wrote {path}")
