import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.Reader;
import java.lang.reflect.InvocationTargetException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

/**
 * Reads each file named on the command line the way spark-submit 4.0.1 reads a properties file
 * (Utils.getPropertiesFromFile: Properties.load over a UTF-8 InputStreamReader, each value
 * trimmed by Utils.trimExceptCRLF) and prints one JSON line per file: {"props": {key: value}}
 * or {"error": "<exception class>: <message>"}. Every character outside printable ASCII is
 * written as a UTF-16 \\uXXXX escape, so the output is plain ASCII.
 *
 * With "--spark" first, Spark's own Utils.getPropertiesFromFile reads the files (spark-core
 * and scala-library on the class path; called by reflection, so this compiles without them).
 */
public class PropertiesOracle {
    public static void main(String[] args) throws Exception {
        boolean spark = args.length > 0 && args[0].equals("--spark");
        for (String path : Arrays.copyOfRange(args, spark ? 1 : 0, args.length)) {
            Map<String, String> props;
            try {
                props = spark ? readWithSpark(path) : read(path);
            } catch (IllegalArgumentException e) {
                System.out.println("{\"error\": " + json(e.getClass().getName() + ": "
                                                         + e.getMessage()) + "}");
                continue;
            }
            StringBuilder out = new StringBuilder("{\"props\": {");
            String sep = "";
            for (Map.Entry<String, String> e : new TreeMap<>(props).entrySet()) {
                out.append(sep).append(json(e.getKey())).append(": ").append(json(e.getValue()));
                sep = ", ";
            }
            System.out.println(out.append("}}"));
        }
    }

    static Map<String, String> read(String path) throws IOException {
        Properties props = new Properties();
        try (Reader in = new InputStreamReader(new FileInputStream(path), StandardCharsets.UTF_8)) {
            props.load(in);
        }
        Map<String, String> out = new HashMap<>();
        for (String key : props.stringPropertyNames()) {
            out.put(key, trimExceptCRLF(props.getProperty(key)));
        }
        return out;
    }

    @SuppressWarnings("unchecked")
    static Map<String, String> readWithSpark(String path) throws Exception {
        Class<?> scalaMap = Class.forName("scala.collection.Map");
        try {
            Object map = Class.forName("org.apache.spark.util.Utils")
                .getMethod("getPropertiesFromFile", String.class).invoke(null, path);
            return (Map<String, String>) Class.forName("scala.jdk.javaapi.CollectionConverters")
                .getMethod("asJava", scalaMap).invoke(null, map);
        } catch (InvocationTargetException e) {
            throw e.getCause() instanceof RuntimeException r ? r : e;
        }
    }

    /** Spark's Utils.trimExceptCRLF: String.trim, but an (escaped) CR or LF is kept. */
    static String trimExceptCRLF(String s) {
        int first = 0, last = s.length() - 1;
        while (first <= last && s.charAt(first) <= ' '
               && s.charAt(first) != '\r' && s.charAt(first) != '\n') first++;
        while (last >= first && s.charAt(last) <= ' '
               && s.charAt(last) != '\r' && s.charAt(last) != '\n') last--;
        return s.substring(first, last + 1);
    }

    static String json(String s) {
        StringBuilder out = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') out.append(c);
            else out.append(String.format("\\u%04x", (int) c));
        }
        return out.append('"').toString();
    }
}
