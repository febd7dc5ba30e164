"""Documents shaped like the ones real folders hold, built by the tests: a Sphinx page with its
sidebar, footer, search index and assets; a PDF manual with an outline, a LaTeX-style dotted-leader
table of contents, ligatures and a back-of-book index; prose in several scripts; gzip files and
extensionless files; an ignore file."""

from __future__ import annotations

import gzip
from pathlib import Path

BUFFER_PROSE = [
    "Certain objects available in Python wrap access to an underlying memory array or buffer. "
    "Such objects include the built-in bytes and bytearray, and some extension types like array.array. "
    "Third-party libraries may define their own types for special purposes, such as image processing "
    "or numeric analysis.",
    "While each of these types have their own semantics, they share the common characteristic of being "
    "backed by a possibly large memory buffer. It is then desirable, in some situations, to access that "
    "buffer directly and without intermediate copying.",
    "Buffer structures (or simply buffers) are useful as a way to expose the binary data from another "
    "object to the Python programmer. They can also be used as a zero-copy slicing mechanism. Using their "
    "ability to reference a block of memory, it is possible to expose any data to the Python programmer "
    "quite easily.",
    "Buffers are usually obtained by sending a buffer request to an exporting object via "
    "PyObject_GetBuffer(). Since the complexity of the logical structure of the memory can vary "
    "drastically, the consumer uses the flags argument to specify the exact buffer type it can handle.",
    "The shape and strides of a buffer describe how its items are laid out. If strides is NULL, the "
    "array is interpreted as a standard n-dimensional C-array. Otherwise, the consumer must access an "
    "n-dimensional array as follows: the item pointer is the base plus the sum of index times stride.",
    "Consumers must call PyBuffer_Release() exactly once for each successful request, when they are "
    "done with the buffer. The exporter may then free any resources it allocated for the request, "
    "and the memory it exposed may be resized or deallocated again.",
]

SIDEBAR = "Quick search"
FOOTER = "Please donate. Created using Sphinx 7.2.6."


def sphinx_page(root: Path) -> Path:
    """A Sphinx-like HTML build: the page, its search index, _static assets and _sources copy."""
    p = BUFFER_PROSE
    link = '<a class="headerlink" href="#x" title="Link to this heading">¶</a>'
    html = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Buffer Protocol &#8212; Python 3.12 documentation</title>
<link rel="stylesheet" href="_static/basic.css"><script src="_static/doctools.js"></script></head>
<body>
<div class="related" role="navigation" aria-label="related navigation"><h3>Navigation</h3>
<ul><li><a href="genindex.html">index</a></li><li><a href="py-modindex.html">modules</a> |</li>
<li>Python 3.12 documentation &#187;</li></ul></div>
<div class="document"><div class="documentwrapper"><div class="bodywrapper">
<div class="body" role="main">
<section id="buffer-protocol"><h1>Buffer Protocol{link}</h1>
<p>{p[0]}</p><p>{p[1]}</p>
<section id="buffer-structure"><h2>Buffer structure{link}</h2>
<p>{p[2]}</p><p>{p[3]}</p>
<section id="shape"><h3>Shape, strides and suboffsets{link}</h3><p>{p[4]}</p></section>
</section>
<section id="release"><h2>Releasing buffers{link}</h2><p>{p[5]}</p></section>
</section>
</div></div></div>
<div class="sphinxsidebar" role="navigation" aria-label="main navigation"><div class="sphinxsidebarwrapper">
<h3><a href="contents.html">Table of Contents</a></h3><ul><li>Buffer Protocol<ul><li>Buffer structure</li>
</ul></li></ul><h3>This Page</h3><ul><li><a href="_sources/buffer.rst.txt">Show Source</a></li></ul>
<div id="searchbox" role="search"><h3>{SIDEBAR}</h3><form><input type="text" name="q"></form></div>
</div></div><div class="clearer"></div></div>
<div class="footer">&#169; Copyright 2001-2024, Python Software Foundation. {FOOTER}</div>
</body></html>"""
    (root / "_static").mkdir(parents=True)
    (root / "_sources").mkdir()
    (root / "buffer.html").write_text(html, encoding="utf-8")
    (root / "searchindex.js").write_text('Search.setIndex({"docnames": ["buffer"], "terms": {"buffer": [0, 1]}})')
    (root / "_static" / "doctools.js").write_text("const Documentation = { init: () => {} };\n")
    (root / "_static" / "basic.css").write_text("div.body { min-width: 360px; }\n")
    (root / "_sources" / "buffer.rst.txt").write_text("Buffer Protocol\n===============\n\n" + p[0])
    return root / "buffer.html"


PDF_CONTENTS = ["Contents", "1 Introduction . . . . . . . . . . . . . . . . . . 2",
                "1.1 Getting started . . . . . . . . . . . . . . . 2",
                "2 Buffers and files . . . . . . . . . . . . . . . 3",
                "2.1 Flushing . . . . . . . . . . . . . . . . . . 3",
                "Index . . . . . . . . . . . . . . . . . . . . . . 4"]
PDF_INDEX = ["Index", "buffer, 3", "buffer overflow, 3", "file, 2, 3", "flush, 3", "flow control, 3",
             "getting started, 2", "introduction, 2"]


def pdf_manual(path: Path) -> Path:
    """Four pages: a spaced dotted-leader TOC, two chapters set with fi/fl ligatures, an index; an outline."""
    import pymupdf

    intro = ("<h1>1 Introduction</h1><p>This manual describes the ﬁle buffer library. A ﬁle is read "
             "into a buffer before it is parsed, and the ﬂow of data is controlled by the caller.</p>"
             "<h2>1.1 Getting started</h2><p>Install the library, then open a ﬁle with open_buffer(). "
             "The ﬁrst call allocates the buffer; later calls reuse it. Each buffer keeps its own "
             "position, so two readers never disturb each other. Close the buffer when you are done.</p>")
    buffers = ("<h1>2 Buffers and files</h1><p>A buffer holds the bytes of a ﬁle between reads. Its size "
               "is ﬁxed when it is created. Reading past its end reﬁlls it from the ﬁle.</p>"
               "<h2>2.1 Flushing</h2><p>Writes go to the buffer ﬁrst. A ﬂush sends them to the ﬁle. "
               "The library ﬂushes on close, and when the buffer is full, so no write is ever lost.</p>")
    doc = pymupdf.open()
    for lines in (PDF_CONTENTS, None, None, PDF_INDEX):
        page = doc.new_page()
        if lines is not None:
            for i, line in enumerate(lines):
                page.insert_text((72, 90 + 18 * i), line, fontsize=11)
    doc[1].insert_htmlbox(pymupdf.Rect(72, 72, 540, 770), intro)
    doc[2].insert_htmlbox(pymupdf.Rect(72, 72, 540, 770), buffers)
    doc.set_toc([[1, "1 Introduction", 2], [2, "1.1 Getting started", 2], [1, "2 Buffers and files", 3],
                 [2, "2.1 Flushing", 3], [1, "Index", 4]])
    doc.save(path)
    doc.close()
    return path


# Real prose in several scripts (Article 1 and the preamble of the Universal Declaration of Human Rights).
SCRIPTS = {
    "zh.txt": "人人生而自由，在尊严和权利上一律平等。他们赋有理性和良心，并应以兄弟关系的精神相对待。"
              "鉴于对人类家庭所有成员的固有尊严及其平等的和不移的权利的承认，乃是世界自由、正义与和平的基础，"
              "鉴于对人权的无视和侮蔑发展为野蛮暴行，这些暴行玷污了人类的良心，而一个人人享有言论和信仰自由"
              "并免予恐惧和匮乏的世界的来临，已被宣布为普通人民的最高愿望，鉴于为使人类不致迫不得已铤而走险"
              "对暴政和压迫进行反叛，有必要使人权受法治的保护。",
    "ja.txt": "すべての人間は、生まれながらにして自由であり、かつ、尊厳と権利とについて平等である。"
              "人間は、理性と良心とを授けられており、互いに同胞の精神をもって行動しなければならない。"
              "人類社会のすべての構成員の固有の尊厳と平等で譲ることのできない権利とを承認することは、"
              "世界における自由、正義及び平和の基礎であるので、人権の無視及び軽侮が、人類の良心を踏みにじった"
              "野蛮行為をもたらし、言論及び信仰の自由が受けられ、恐怖及び欠乏のない世界の到来が、一般の人々の"
              "最高の願望として宣言されたので、",
    "ru.txt": "Все люди рождаются свободными и равными в своем достоинстве и правах. Они наделены разумом и "
              "совестью и должны поступать в отношении друг друга в духе братства. Принимая во внимание, что "
              "признание достоинства, присущего всем членам человеческой семьи, и равных и неотъемлемых прав "
              "их является основой свободы, справедливости и всеобщего мира; и принимая во внимание, что "
              "пренебрежение и презрение к правам человека привели к варварским актам.",
    "ar.txt": "يولد جميع الناس أحرارًا متساوين في الكرامة والحقوق. وقد وهبوا عقلاً وضميرًا وعليهم أن يعامل "
              "بعضهم بعضًا بروح الإخاء. لما كان الاعتراف بالكرامة المتأصلة في جميع أعضاء الأسرة البشرية "
              "وبحقوقهم المتساوية الثابتة هو أساس الحرية والعدل والسلام في العالم. ولما كان تناسي حقوق الإنسان "
              "وازدراؤها قد أفضيا إلى أعمال همجية آذت الضمير الإنساني.",
    "el.txt": "Όλοι οι άνθρωποι γεννιούνται ελεύθεροι και ίσοι στην αξιοπρέπεια και τα δικαιώματα. Είναι "
              "προικισμένοι με λογική και συνείδηση, και οφείλουν να συμπεριφέρονται μεταξύ τους με πνεύμα "
              "αδελφοσύνης. Επειδή η αναγνώριση της αξιοπρέπειας, που είναι σύμφυτη σε όλα τα μέλη της "
              "ανθρώπινης οικογένειας, καθώς και των ίσων και αναπαλλοτρίωτων δικαιωμάτων τους, αποτελεί "
              "το θεμέλιο της ελευθερίας, της δικαιοσύνης και της ειρήνης στον κόσμο.",
    "fr.txt": "Tous les êtres humains naissent libres et égaux en dignité et en droits. Ils sont doués de "
              "raison et de conscience et doivent agir les uns envers les autres dans un esprit de fraternité. "
              "Considérant que la reconnaissance de la dignité inhérente à tous les membres de la famille "
              "humaine et de leurs droits égaux et inaliénables constitue le fondement de la liberté, de la "
              "justice et de la paix dans le monde; considérant que la méconnaissance et le mépris des droits "
              "de l'homme ont conduit à des actes de barbarie qui révoltent la conscience de l'humanité.",
}


def common_files(root: Path) -> None:
    """What a package's doc folder holds: gzip text, extensionless and oddly named text, a binary."""
    news = "libbuffer (2.1-1) unstable; urgency=medium\n\n  * New upstream release: faster flush.\n" * 4
    (root / "NEWS.gz").write_bytes(gzip.compress(news.encode()))
    (root / "README.md.gz").write_bytes(gzip.compress(b"# libbuffer\n\n## Building\n\nRun make to build the "
                                                      b"library. Run make check to test it.\n"))
    (root / "bomb.txt.gz").write_bytes(gzip.compress(b"0" * 20_000_000))        # ratio far over 100
    (root / "copyright").write_text("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n"
                                    "Upstream-Name: libbuffer\nLicense: MIT\n Permission is hereby granted, "
                                    "free of charge, to any person obtaining a copy of this software.\n")
    (root / "README.logs").write_bytes("Les journaux sont écrits dans /var/log/libbuffer, un fichier par "
                                       "jour; les anciens sont compressés.\n".encode("latin-1"))
    (root / "blob").write_bytes(b"\x7fELF\x02\x01\x01\x00\x00\x00" + bytes(range(256)))


def ignore_cases(root: Path) -> None:
    """A .ragtuiignore, what it and the defaults leave out, and a hidden file."""
    (root / ".ragtuiignore").write_text("# local rules\ndrafts/\n*.bak\n")
    (root / "drafts").mkdir()
    (root / "drafts" / "old.txt").write_text("An old draft nobody should find.")
    (root / "notes.bak").write_text("A backup copy.")
    (root / "node_modules" / "left-pad").mkdir(parents=True)
    (root / "node_modules" / "left-pad" / "index.js").write_text("module.exports = leftPad;\n")
    (root / "package-lock.json").write_text('{"lockfileVersion": 3}')
    (root / ".hidden.txt").write_text("hidden")
