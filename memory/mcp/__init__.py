"""dualmem over the Model Context Protocol: ``dualmem mcp`` serves one home's memory to one
agent session over stdio (the official ``mcp`` SDK). ``tools`` holds what is offered, over a
store opened once; ``server`` publishes it and runs the protocol. Many sessions run many
servers on one home; the store keeps them one memory."""
