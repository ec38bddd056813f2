"""Test and experiment machinery, run from a clone of the repository and never installed:
`machine` (Debian packages installed with apt, process groups stopped), `local_cluster` (a Spark
standalone cluster and a Spark Connect server on 127.0.0.1), `rabbitmq_broker` (a private
RabbitMQ broker) and `rabbitmq_experiment` (a SAC group on a real broker beside the simulation).

They start servers and install system packages, which no module of the installed package does:
the tests (pytest puts the repository's root on the path), the benchmarks and the commands
`python -m tools.<name>` (run from the repository's root) use them."""
