// A real HDFS (MiniDFSCluster: NameNode + DataNode) and YARN (MiniYARNCluster: ResourceManager + NodeManager)
// in one JVM, for the tests (tests/yarn_cluster.py). Run as a single-file program, nothing to build:
//
//   java -cp '.jars/hadoop/*' jvm/hadoop/MiniHadoop.java WORK_DIR CONF_DIR KEY=VALUE...
//
// KEY=VALUE pairs are Hadoop settings (the ports tests/yarn_cluster.py picked, the NodeManager's size). Once both
// clusters are up it writes the client configuration a gateway host has into CONF_DIR (core-site.xml with
// fs.defaultFS on this HDFS, hdfs-site.xml, yarn-site.xml with the ResourceManager's addresses), prints
// "MINIHADOOP READY" and runs until it is sent SIGTERM (or its standard input closes), then stops both.
import java.io.File;
import java.io.FileOutputStream;
import java.io.OutputStream;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.MiniYARNCluster;

public class MiniHadoop {
  // What a gateway's yarn-site.xml says: where the ResourceManager is, and the settings Spark's YARN client reads.
  static final String[] YARN_CLIENT_KEYS = {
    "yarn.resourcemanager.hostname", "yarn.resourcemanager.address", "yarn.resourcemanager.scheduler.address",
    "yarn.resourcemanager.resource-tracker.address", "yarn.resourcemanager.admin.address",
    "yarn.resourcemanager.webapp.address", "yarn.scheduler.minimum-allocation-mb",
    "yarn.scheduler.maximum-allocation-mb",
  };

  public static void main(String[] args) {
    try {
      run(args);
    } catch (Throwable t) {
      t.printStackTrace();
      System.exit(1);  // the NameNode's threads would keep a half-started JVM alive
    }
  }

  static void run(String[] args) throws Exception {
    File work = new File(args[0]).getAbsoluteFile();
    File confDir = new File(args[1]).getAbsoluteFile();
    YarnConfiguration conf = new YarnConfiguration();
    for (int i = 2; i < args.length; i++) {
      String[] kv = args[i].split("=", 2);
      conf.set(kv[0], kv[1]);
    }
    MiniDFSCluster dfs = new MiniDFSCluster.Builder(conf, new File(work, "dfs"))
        .numDataNodes(1)
        .nameNodePort(conf.getInt("minihadoop.namenode.port", 0))
        .nameNodeHttpPort(conf.getInt("minihadoop.namenode.http.port", 0))
        .build();
    dfs.waitActive();
    String defaultFs = "hdfs://127.0.0.1:" + dfs.getNameNodePort();
    conf.set("fs.defaultFS", defaultFs);

    // MiniYARNCluster keeps the NodeManager's local and log dirs under Hadoop's test directory.
    System.setProperty("test.build.data", new File(work, "yarn").getPath());
    MiniYARNCluster yarn = new MiniYARNCluster("minihadoop", 1, 1, 1, 1);
    yarn.init(conf);
    yarn.start();
    Configuration live = yarn.getConfig();

    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      System.out.println("MINIHADOOP STOPPING");
      try { yarn.stop(); } catch (Throwable t) { t.printStackTrace(); }
      try { dfs.shutdown(); } catch (Throwable t) { t.printStackTrace(); }
      System.out.println("MINIHADOOP STOPPED");
      System.out.flush();
    }, "minihadoop-stop"));

    confDir.mkdirs();
    Configuration core = new Configuration(false);
    core.set("fs.defaultFS", defaultFs);
    write(core, new File(confDir, "core-site.xml"));
    Configuration hdfs = new Configuration(false);
    hdfs.set("dfs.replication", "1");
    write(hdfs, new File(confDir, "hdfs-site.xml"));
    Configuration yarnSite = new Configuration(false);
    for (String key : YARN_CLIENT_KEYS) {
      String value = live.get(key);
      if (value != null) yarnSite.set(key, value);
    }
    write(yarnSite, new File(confDir, "yarn-site.xml"));

    System.out.println("MINIHADOOP READY " + defaultFs + " " + live.get("yarn.resourcemanager.address")
        + " http://" + live.get("yarn.resourcemanager.webapp.address"));
    System.out.flush();
    // Runs until SIGTERM (the shutdown hook) or until the test process that started it is gone (stdin closes).
    while (System.in.read() >= 0) { }
    System.exit(0);
  }

  static void write(Configuration c, File f) throws Exception {
    try (OutputStream out = new FileOutputStream(f)) {
      c.writeXml(out);
    }
  }
}
