"""Research experiments behind design decisions of the book (not imported by chapters)."""
