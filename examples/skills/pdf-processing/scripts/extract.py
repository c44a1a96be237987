#!/usr/bin/env python3
"""Print the text of a PDF (pdftotext does the work)."""
import subprocess
import sys

sys.exit(subprocess.call(["pdftotext", "-layout", sys.argv[1], "-"]))
