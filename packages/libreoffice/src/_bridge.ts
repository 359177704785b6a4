/**
 * The bridge between one soffice process and Node: a Python program run by the system's
 * `python3` with Debian's `python3-uno`, which connects to soffice over its UNO pipe and then
 * converts one document per line it reads on stdin, answering one line of JSON on stdout.
 *
 * Request: `{"id": 1, "input": "/abs/in.ods", "output": "/abs/out.pdf", "kind": "spreadsheet"}`.
 * Answer: `{"id": 1, "ok": true}` or `{"id": 1, "ok": false, "error": "…"}`; the first line it
 * writes is `{"ready": true, "version": "7.4.7.2"}` once connected. It exits when soffice is gone
 * (the pool replaces both then).
 *
 * It is also soffice's guardian. Its stdin is a pipe from the Node process that drives it, so it
 * reads end-of-file as soon as that process is gone, however it went (an exit, a crash, SIGKILL
 * from the worker pool): it then kills soffice's process group and removes the instance folder
 * and soffice's pipe sockets (arguments: the group id, the folder, the sockets), which nothing
 * else would do. A thread reads
 * stdin, so this happens even while a conversion is under way.
 */
export const BRIDGE_SOURCE = String.raw`
import json, os, queue, shutil, signal, sys, threading, time
import uno
from com.sun.star.beans import PropertyValue
from com.sun.star.connection import NoConnectException
from com.sun.star.lang import DisposedException
from com.sun.star.uno import RuntimeException

def prop(name, value):
    p = PropertyValue()
    p.Name = name
    p.Value = value
    return p

def answer(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()

pipe, start_timeout = sys.argv[1], float(sys.argv[2])
office_group, instance_dir, sockets = int(sys.argv[3]), sys.argv[4], sys.argv[5:]

def end_office():
    try:
        os.killpg(office_group, signal.SIGKILL)
    except OSError:
        pass
    shutil.rmtree(instance_dir, ignore_errors=True)
    for socket in sockets:
        try:
            os.unlink(socket)
        except OSError:
            pass
    os._exit(0)

requests = queue.Queue()

def read_requests():
    for line in sys.stdin:
        requests.put(line)
    # End of stdin: whoever drove this bridge is gone and will not stop soffice.
    end_office()

threading.Thread(target=read_requests, daemon=True).start()

local = uno.getComponentContext()
resolver = local.ServiceManager.createInstanceWithContext("com.sun.star.bridge.UnoUrlResolver", local)
started = time.monotonic()
while True:
    try:
        context = resolver.resolve("uno:pipe,name=%s;urp;StarOffice.ComponentContext" % pipe)
        break
    except NoConnectException:
        if time.monotonic() - started > start_timeout:
            raise
        time.sleep(0.05)
manager = context.ServiceManager
desktop = manager.createInstanceWithContext("com.sun.star.frame.Desktop", context)
provider = manager.createInstanceWithContext("com.sun.star.configuration.ConfigurationProvider", context)
product = provider.createInstanceWithArguments(
    "com.sun.star.configuration.ConfigurationAccess", (prop("nodepath", "/org.openoffice.Setup/Product"),))
answer({"ready": True, "version": product.getByName("ooSetupVersionAboutBox")})

# Import filters named, never detected: the bytes are what the engine rebuilt, and nothing else
# is to read them. MacroExecutionMode 0 is NEVER_EXECUTE, UpdateDocMode 0 is NO_UPDATE.
IMPORT = {"spreadsheet": "calc8", "presentation": "impress8"}
EXPORT = {"spreadsheet": "calc_pdf_Export", "presentation": "impress_pdf_Export"}
FILTER_DATA = uno.Any("[]com.sun.star.beans.PropertyValue", (
    prop("ExportNotes", False),
    prop("ExportNotesPages", False),
    prop("ExportFormFields", False),
    prop("ExportLinksRelativeFsys", False),
    prop("ConvertOOoTargetToPDFTarget", False),
))

def convert(request):
    document = desktop.loadComponentFromURL(uno.systemPathToFileUrl(request["input"]), "_blank", 0, (
        prop("Hidden", True),
        prop("ReadOnly", True),
        prop("MacroExecutionMode", 0),
        prop("UpdateDocMode", 0),
        prop("RepairPackage", False),
        prop("FilterName", IMPORT[request["kind"]]),
    ))
    if document is None:
        raise ValueError("LibreOffice did not open the document")
    try:
        if request["kind"] == "spreadsheet":
            # A print range limits a sheet to it; without one Calc prints the whole used area.
            sheets = document.getSheets()
            for index in range(sheets.getCount()):
                sheets.getByIndex(index).setPrintAreas(())
        document.storeToURL(uno.systemPathToFileUrl(request["output"]), (
            prop("FilterName", EXPORT[request["kind"]]),
            prop("FilterData", FILTER_DATA),
        ))
    finally:
        document.close(True)

while True:
    request = json.loads(requests.get())
    try:
        convert(request)
        answer({"id": request["id"], "ok": True})
    except (DisposedException, RuntimeException) as error:
        answer({"id": request["id"], "ok": False, "error": "soffice: %s" % error.Message})
        sys.exit(3)
    except Exception as error:
        answer({"id": request["id"], "ok": False, "error": str(error)})
`;
