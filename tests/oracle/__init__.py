"""The bash oracle: run a fixture under real bash with every launcher replaced by a recorder, then
compare what bash launched with packlint's launch model (see harness.py)."""
