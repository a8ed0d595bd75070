import "./style.css";
import { mountShell } from "./app";
import { goBackend } from "./backend";

mountShell(document, goBackend);
