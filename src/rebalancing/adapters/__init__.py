"""Real clients: strategies plugged into Kafka consumer groups (rebalancing.adapters.kafka, for
kafka-python and aiokafka). Each adapter module imports its client; this package imports none."""
