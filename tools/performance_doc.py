"""docs/performance.md's generated sections: each tool owns the text between its NAME-begin and
NAME-end markers and writes it again on every run."""
import pathlib

DOC = pathlib.Path(__file__).resolve().parent.parent / "docs" / "performance.md"


def write_section(name, section, before=None):
    """Puts `section` (which starts with `<!-- NAME-begin` and ends with `<!-- NAME-end -->`) in
    place of the section's last text, or, the first time, before the heading `before` (else at
    the end)."""
    doc = DOC.read_text()
    end_marker = f"<!-- {name}-end -->"
    section = section.rstrip("\n") + "\n"
    begin, end = doc.find(f"<!-- {name}-begin"), doc.find(end_marker)
    if begin >= 0 and end > begin:
        doc = doc[:begin] + section + doc[end + len(end_marker) + 1:]
    elif before and before in doc:
        at = doc.find(before)
        doc = doc[:at] + section + "\n" + doc[at:]
    else:
        doc = doc.rstrip("\n") + "\n\n" + section
    DOC.write_text(doc)
