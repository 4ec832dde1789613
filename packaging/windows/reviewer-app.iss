; Inno Setup 6 script: the Windows installer around the PyInstaller bundle in dist\reviewer-app.
;
;   python packaging\build_installers.py bundle
;   iscc /DAppVersion=<version> /DNumericVersion=<a.b.c.d> packaging\windows\reviewer-app.iss
;
; The version comes from pyproject.toml (`python packaging/project_meta.py version`); the release
; workflow passes it. Output: dist\reviewer-app-<version>-windows-x86_64-setup.exe
;
; Installs per user by default (no admin prompt; %LOCALAPPDATA%\Programs\Reviewer), or for all
; users when elevated. Start-menu entry runs Reviewer.exe (windowed); reviewer-app.exe next to it
; is the command-line executable (--version, --self-test, headless commands).

#ifndef AppVersion
  #error Pass the version: iscc /DAppVersion=x.y.z packaging\windows\reviewer-app.iss
#endif
#ifndef NumericVersion
  ; Windows version resources take four integers only (0.2.0rc1 -> 0.2.0.0)
  #define NumericVersion AppVersion
#endif
#ifndef BundleDir
  #define BundleDir "..\..\dist\reviewer-app"
#endif
#ifndef OutputDir
  #define OutputDir "..\..\dist"
#endif
#ifndef IconFile
  #define IconFile "..\..\build\icons\reviewer.ico"
#endif

#define AppName "Reviewer"
#define AppExeName "Reviewer.exe"

[Setup]
; Fixed forever: upgrades find and replace the previous install through it.
AppId={{5B0E4D2C-8F7A-4F4B-9E51-3C1D7A2E6B90}
AppName={#AppName}
AppVersion={#AppVersion}
AppVerName={#AppName} {#AppVersion}
AppPublisher=Reviewer developers
DefaultDirName={autopf}\{#AppName}
DefaultGroupName={#AppName}
DisableProgramGroupPage=yes
PrivilegesRequired=lowest
PrivilegesRequiredOverridesAllowed=dialog
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible
MinVersion=10.0
OutputDir={#OutputDir}
OutputBaseFilename=reviewer-app-{#AppVersion}-windows-x86_64-setup
SetupIconFile={#IconFile}
UninstallDisplayIcon={app}\{#AppExeName}
UninstallDisplayName={#AppName} {#AppVersion}
VersionInfoVersion={#NumericVersion}
Compression=lzma2/max
SolidCompression=yes
WizardStyle=modern
CloseApplications=yes

[Tasks]
Name: "desktopicon"; Description: "{cm:CreateDesktopIcon}"; GroupDescription: "{cm:AdditionalIcons}"; Flags: unchecked

[InstallDelete]
; An upgrade must not keep libraries the new bundle no longer ships.
Type: filesandordirs; Name: "{app}\_internal"

[Files]
Source: "{#BundleDir}\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs createallsubdirs

[Icons]
Name: "{autoprograms}\{#AppName}"; Filename: "{app}\{#AppExeName}"
Name: "{autodesktop}\{#AppName}"; Filename: "{app}\{#AppExeName}"; Tasks: desktopicon

[Run]
Filename: "{app}\{#AppExeName}"; Description: "{cm:LaunchProgram,{#AppName}}"; Flags: nowait postinstall skipifsilent
