from packlint.cli import main

raise SystemExit(main())
