from runtime_probe.cli import main

raise SystemExit(main())
