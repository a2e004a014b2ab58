from packlint.cli import entry

entry()
