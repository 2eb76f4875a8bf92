"""One request's parser: the MAX-style contract (``contract``), its argument and option
checks (``arguments``, ``option_keys``), cursor snapshots (``snapshots``), the family
registry (``registry``), probing of thinking switches (``switches``) and the streaming
``TextSplitter`` (``splitter``)."""
