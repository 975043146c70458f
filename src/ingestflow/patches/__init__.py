"""Every run-time change ingestflow makes to another library, behind one guard.

`guard` declares and checks: each library module here names the versions its patches were
written against (`SUPPORTED`) and each replaced attribute with the signature it assumes; nothing
is replaced before the installed version and the attribute's shape are checked. One module per
patched library (`unstructured`, `pillow`, `pytesseract`, `omegaconf`, `ray`, `httpcore`,
`typer`) and `imports` (a module blocked or stood in for). No other module of
ingestflow assigns into a third-party module or class (tests/patches/test_guard.py checks).
Importing this package imports none of the patched libraries.
"""
