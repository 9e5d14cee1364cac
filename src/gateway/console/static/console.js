// The console's only script, loaded by every page (script-src 'self': no inline script anywhere).
// Pages work without it; it adds what needs a script: the copy buttons.
/** Copies the value of the field a `button[data-copy]` names; the button stays hidden when no copy is possible. */
function setUpCopyButtons() {
  for (const button of document.querySelectorAll('button[data-copy]')) {
    const source = document.getElementById(button.dataset.copy);
    const status = document.getElementById(button.dataset.copyStatus);
    if (!source) continue;
    button.hidden = false;
    button.addEventListener('click', async () => {
      const say = (text) => {
        if (status) status.textContent = text;
      };
      try {
        if (navigator.clipboard && window.isSecureContext) {
          await navigator.clipboard.writeText(source.value);
        } else {
          // Plain http on a non-loopback host has no Clipboard API: the legacy command still copies a selection.
          source.select();
          if (!document.execCommand('copy')) throw new Error('copy refused');
        }
        say('Copied to the clipboard.');
      } catch {
        source.select();
        say('Could not copy: the key is selected, copy it with your keyboard.');
      }
    });
  }
}

// Loaded with `defer`: the document is parsed by now.
setUpCopyButtons();
