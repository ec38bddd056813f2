"""Tests of Kafka's group protocols as sessions in seconds."""
