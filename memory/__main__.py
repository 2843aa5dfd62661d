from memory.cli import main

raise SystemExit(main())
