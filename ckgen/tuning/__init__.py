"""Measuring and choosing: run the profilers (profile), build a tuning database and judge the
selection (tune), and report results against cuDNN (report)."""
