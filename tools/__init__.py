"""Maintenance tools of the book (not part of the ``kbvqa`` package, not installed): executing the
notebooks one after another with timings (``nb_execute``) and comparing two executions of the same
notebook with run-dependent details removed (``nb_compare``)."""
