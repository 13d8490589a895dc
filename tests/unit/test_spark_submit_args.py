"""The spark-submit command lines ./spark-submit.sh builds for each cluster manager (``--dry-run`` prints them).

No YARN here: what is checked is the command a user's cluster would receive: which Python the
driver and the executors run, what is shipped, and the combinations Spark would refuse.
"""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
VENV_PYTHON = str(REPO / ".venv" / "bin" / "python")


def dry_run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["./spark-submit.sh", *args, "--dry-run"], cwd=REPO, capture_output=True, text=True,
                          timeout=120)


def submitted(*args: str) -> tuple[dict[str, str], list[str], list[str]]:
    """(--conf key -> value, the other spark-submit options, the driver's arguments) of a dry run."""
    out = dry_run(*args)
    assert out.returncode == 0, out.stderr
    words = shlex.split(out.stdout)
    assert words[0] == "spark-submit"
    app = words.index("jobs/connect.py")
    confs: dict[str, str] = {}
    options: list[str] = []
    it = iter(words[1:app])
    for word in it:
        if word == "--conf":
            key, _, value = next(it).partition("=")
            confs[key] = value
        else:
            options.append(word)
    return confs, options, words[app + 1:]


def option(options: list[str], name: str) -> str | None:
    return options[options.index(name) + 1] if name in options else None


def test_yarn_client_mode_keeps_the_driver_on_the_local_venv_and_executors_on_the_shipped_one():
    confs, options, app = submitted("--master", "yarn", "--deploy-mode", "client")
    assert confs["spark.pyspark.driver.python"] == VENV_PYTHON  # the bug: it used to be ./environment/...
    assert confs["spark.pyspark.python"] == "./environment/bin/python"
    assert option(options, "--archives") == "build/sparkcat-venv.tar.gz#environment"
    assert option(options, "--py-files") == "build/sparkcat.zip"
    assert option(options, "--deploy-mode") == "client" and app == []


def test_yarn_cluster_mode_ships_conf_and_pipelines_and_points_the_driver_at_them():
    confs, options, app = submitted("--master", "yarn", "--deploy-mode", "cluster", "--bootstrap-servers", "k:9092")
    assert "spark.pyspark.driver.python" not in confs, "the driver runs in the AM, not here"
    for key in ("spark.pyspark.python", "spark.yarn.appMasterEnv.PYSPARK_PYTHON", "spark.executorEnv.PYSPARK_PYTHON"):
        assert confs[key] == "./environment/bin/python"
    assert option(options, "--archives").split(",") == [
        "build/sparkcat-venv.tar.gz#environment", "build/sparkcat-conf.zip#conf",
        "build/sparkcat-pipelines.zip#pipelines"]
    assert app == ["--bootstrap-servers", "k:9092", "--worker-config", "conf/worker.yaml", "--pipelines", "pipelines"]


def test_cluster_mode_keeps_the_users_own_worker_config_and_an_installed_executor_python():
    confs, options, app = submitted("--master", "yarn", "--deploy-mode=cluster", "--executor-python",
                                    "/opt/py/bin/python", "--worker-config", "conf/prod.yaml")
    assert confs["spark.yarn.appMasterEnv.PYSPARK_PYTHON"] == "/opt/py/bin/python"
    assert option(options, "--archives") == "build/sparkcat-conf.zip#conf,build/sparkcat-pipelines.zip#pipelines"
    assert app == ["--worker-config", "conf/prod.yaml", "--pipelines", "pipelines"]


def test_local_master_ships_nothing_and_spark_options_pass_through():
    confs, options, _ = submitted("--master", "local[2]", "--conf", "spark.executor.memory=2g")
    assert confs == {"spark.executor.memory": "2g"}
    assert "--archives" not in options and "--py-files" not in options


def test_the_users_own_jars_py_files_and_archives_join_the_scripts_own():
    """spark-submit keeps only the last ``--jars``/``--py-files``/``--archives``: a user's ``--jars hadoop-aws.jar``
    (for s3a checkpoints) or ``--archives`` would drop sparkcat's jars or the shipped venv."""
    confs, options, _ = submitted("--master", "yarn", "--deploy-mode", "cluster", "--jars", "/opt/hadoop-aws.jar",
                                  "--py-files=/opt/lib.zip", "--archives", "/opt/keys.zip#keys",
                                  "--archives", "/opt/more.zip#more")
    assert options.count("--jars") == options.count("--py-files") == options.count("--archives") == 1
    jars = option(options, "--jars").split(",")
    assert jars[-1] == "/opt/hadoop-aws.jar" and any(j.endswith("sparkcat-jvm.jar") for j in jars)
    assert option(options, "--py-files") == "build/sparkcat.zip,/opt/lib.zip"
    assert option(options, "--archives").split(",") == [
        "build/sparkcat-venv.tar.gz#environment", "build/sparkcat-conf.zip#conf",
        "build/sparkcat-pipelines.zip#pipelines", "/opt/keys.zip#keys", "/opt/more.zip#more"]
    _, options, _ = submitted("--master", "local[2]", "--py-files", "/opt/lib.zip", "--archives", "/opt/a.zip#a")
    assert option(options, "--py-files") == "/opt/lib.zip" and option(options, "--archives") == "/opt/a.zip#a"


def test_standalone_and_kubernetes_cluster_mode_and_supervise_in_yarn_cluster_mode_are_refused():
    out = dry_run("--master", "spark://h:7077", "--deploy-mode", "cluster")
    assert out.returncode == 2 and out.stdout == ""
    assert "not supported for python applications on standalone clusters" in out.stderr
    assert "--deploy-mode client" in out.stderr and "--supervise" in out.stderr
    out = dry_run("--master", "yarn", "--deploy-mode", "cluster", "--supervise")
    assert out.returncode == 2 and "spark.yarn.maxAppAttempts" in out.stderr
    out = dry_run("--master", "k8s://https://api:6443", "--deploy-mode", "cluster")
    assert out.returncode == 2 and "--deploy-mode cluster on Kubernetes is not supported" in out.stderr
    out = dry_run("--master", "yarn", "--deploy-mode", "both")
    assert out.returncode == 2 and "client or cluster" in out.stderr


def test_cluster_mode_archives_unpack_to_conf_and_pipelines_and_sparkcat_zip_is_importable():
    """The archives as ``--archives X#conf`` unpacks them: their entries are at the archive's root."""
    import zipfile

    script = ("source scripts/submit_args.sh; dry_run=0; deploy_mode=cluster; "
              "executor_python=/opt/py/bin/python; sparkcat_pack")
    subprocess.run(["bash", "-c", script], cwd=REPO, check=True, timeout=120)
    conf = zipfile.ZipFile(REPO / "build" / "sparkcat-conf.zip").namelist()
    pipelines = zipfile.ZipFile(REPO / "build" / "sparkcat-pipelines.zip").namelist()
    code = zipfile.ZipFile(REPO / "build" / "sparkcat.zip").namelist()
    assert {"worker.yaml", "spark-defaults.conf", "log4j2.properties"} <= {n.lstrip("./") for n in conf}
    assert {"increment.yaml", "data/sample.txt"} <= {n.lstrip("./") for n in pipelines}
    assert "sparkcat/__init__.py" in code and "sparkcat/bootstrap.py" in code
    assert not any("__pycache__" in n for n in code)
