"""What admission may spend in a cycle (``admission.Room``): built from the books, its
per-queue figures kept from one cycle to the next (``keeper``), spent by each head admitted
(``spend``); each queue's head (``heads``) and the heads kept waiting for a count
(``limit_waits``); and what admitting an app commits of the cluster (``commitment``)."""
