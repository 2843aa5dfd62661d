from memory.entry import main

raise SystemExit(main())
