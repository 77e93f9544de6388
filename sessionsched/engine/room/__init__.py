"""What admission may spend in a cycle (``admission.Room``): built from the books, its
per-queue figures kept from one cycle to the next (``keeper``), spent by each head admitted
(``spend``); each queue's head (``heads``), the heads kept waiting for a count
(``limit_waits``) and the queues whose apps all need a room waited for (``shut_out``); what
admitting an app commits of the cluster (``commitment``); and whether a head fits beside what
its queue's running apps still want (``demand``)."""
