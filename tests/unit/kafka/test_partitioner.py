"""Java's default partitioner, reproduced: Kafka's own murmur2 test vectors (clients' UtilsTest)."""

from sparkcat.kafka.partitioner import murmur2, partition_for

JAVA_CASES = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


def test_murmur2_matches_kafka_utils_test_vectors() -> None:
    assert {k: murmur2(k) for k in JAVA_CASES} == JAVA_CASES


def test_partition_is_positive_murmur2_mod_count() -> None:
    # -973932308 & 0x7fffffff = 1173551340; Java: Utils.toPositive(murmur2(key)) % 25
    assert partition_for(b"21", 25) == 1173551340 % 25
    assert all(0 <= partition_for(k, 5) < 5 for k in JAVA_CASES)
