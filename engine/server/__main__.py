from engine.server.cli import main

raise SystemExit(main())
