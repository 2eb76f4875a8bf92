"""The continuous batch: one engine step for every slot (``step``), the slot arrays
(``slots``), per-machine tables (``tables``), the scalar lane for a few requests
(``small``), each request's lane decided at admission (``lanes``), the table pass
(``route``), the per-request fallback (``fallback``), the step's result read from the
slots (``fill``), thinking budgets (``budget``), the grammar gate (``grammar``:
response_format to a matcher; ``grammar_slots``: matchers by slot), the step's result
(``result``), batch-wide text (``text``), its errors and types."""
